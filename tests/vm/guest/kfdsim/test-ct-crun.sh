#!/bin/sh
# Debian trixie's crun (1.21, libcriu 4.1.1) checkpoints and restores a GPU
# container with the plugin installed by `make deb`'s package (guest/ct.sh,
# ct_cases): (a) the same GPUs, (b) other GPUs, (c) too few. crun runs CRIU
# outside the container's cgroup and installs the container's device rules
# only after the restore: the restored task may then use every GPU of the
# node, KFD would give its process all 8, and the plugin cannot tell which
# the container was given. So each restore names them, as an operator
# would (AMDGPU_CRIU_GPUS: render nodes in the plugin's options file, PCI
# addresses or a unique_id in the environment of `crun restore`, which
# overrides the file), and the plugin opens /dev/kfd for those only
# (kfd_confine.h). Without the name, one line says so.
# vm-boot: ct
# vm-timeout: 360
. /test/lib/guest.sh
. /test/lib/ct.sh
ct_missing crun && { tap_done; exit; }
kfdsim_debugfs || diag "no kfdsim debugfs"
# (b), (c): in the environment of `crun restore`, by stable identity as a
# device plugin or DRA driver knows a GPU: (b) PCI addresses, (c) a
# unique_id; (a): render nodes in the plugin's options file (runtimes that
# drop the environment, podman's checkpoint)
CONF=/etc/criu/amdgpu_plugin.conf
# uid_of MINOR: its unique_id as 16 hex digits (sysfs has it in decimal, above 2^53)
uid_of() { printf '%016x\n' "$(kfd_prop_of "$1" | awk '{ print $3 }')"; }
ct_gpus_for() {
	local v m
	rm -f "$CONF"
	case $CT_CASE in
	a)
		v=$(echo "$@" | sed 's/\([0-9][0-9]*\)/renderD\1/g; s/ /,/g')
		mkdir -p /etc/criu && printf '# the GPUs crun gives the container\nAMDGPU_CRIU_GPUS = %s\n' "$v" >"$CONF"
		return ;;
	b) for m in "$@"; do v="${v:+$v,}$(pci_of "$m")"; done ;;
	*) for m in "$@"; do v="${v:+$v,}$(uid_of "$m")"; done ;;
	esac
	echo "AMDGPU_CRIU_GPUS=$v"
	echo "$v" >"$CT/gpus-$CT_CASE"
}
ct_cases crun
check "crun (a) took the GPUs from $CONF" grep -q "options file $CONF" "$CT/img.rwork/restore.log"
diag "crun (b) named its GPUs $(cat "$CT/gpus-b" 2>/dev/null), (c) $(cat "$CT/gpus-c" 2>/dev/null)"
check "crun (b), (c) named the GPUs by PCI address and by unique_id" \
	grep -qE '^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7](,[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])+$' "$CT/gpus-b" &&
	grep -qE '^[0-9a-f]{16}$' "$CT/gpus-c"
rm -f "$CONF"
check "kfdsim loaded again as the boot loaded it" kfdsim_reload
tap_done
