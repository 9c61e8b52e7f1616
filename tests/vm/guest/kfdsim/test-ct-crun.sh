#!/bin/sh
# Debian trixie's crun (1.21, libcriu 4.1.1) checkpoints and restores a GPU
# container with the plugin installed by `make deb`'s package (guest/ct.sh,
# ct_cases): (a) the same GPUs, (b) other GPUs, (c) too few. crun runs CRIU
# outside the container's cgroup and installs the container's device rules
# only after the restore: the restored task may then use every GPU of the
# node, KFD would give its process all 8, and the plugin cannot tell which
# the container was given. So each restore names them, as an operator
# would (AMDGPU_CRIU_GPUS, here in the plugin's options file, which the
# environment of `crun restore` overrides), and the plugin opens /dev/kfd
# for those only (kfd_confine.h). Without the name, one line says so.
# vm-boot: ct
# vm-timeout: 180
. /test/lib/guest.sh
. /test/lib/ct.sh
ct_missing crun && { tap_done; exit; }
kfdsim_debugfs || diag "no kfdsim debugfs"
# (b), (c): in the environment of `crun restore`; (a): in the plugin's
# options file (runtimes that drop the environment, podman's checkpoint)
CONF=/etc/criu/amdgpu_plugin.conf
ct_gpus_for() {
	local v
	v=$(echo "$@" | sed 's/\([0-9][0-9]*\)/renderD\1/g; s/ /,/g')
	rm -f "$CONF"
	if [ "$CT_CASE" = a ]; then
		mkdir -p /etc/criu && printf '# the GPUs crun gives the container\nAMDGPU_CRIU_GPUS = %s\n' "$v" >"$CONF"
	else
		echo "AMDGPU_CRIU_GPUS=$v"
	fi
}
ct_cases crun
check "crun (a) took the GPUs from $CONF" grep -q "options file $CONF" "$CT/img.rwork/restore.log"
rm -f "$CONF"
check "kfdsim loaded again as the boot loaded it" kfdsim_reload
tap_done
