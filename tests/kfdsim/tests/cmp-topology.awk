# SPDX-License-Identifier: GPL-2.0
# Compares a KFD sysfs topology capture with the live tree (busybox awk).
# Input: one path per line, relative to the capture root (files only).
# Every capture file must exist in the live tree with the same lines, except
# that lines of keys KFD 6.12 prints but the capture's kernel did not
# (cwsr_size, ctl_stack_size, recommended_sdma_engine_id_mask) are ignored
# when the capture file lacks them. Prints "# " lines for differences and
# a last line "files N differ M". Capture lines of keys KFD 6.12 does not
# print (capability2) and of the keys in "ignore" (comma-separated) are
# skipped, e.g. ignore=drm_render_minor for captures with zeroed minors.
# usage: find ... | awk -v cap=DIR -v live=DIR [-v ignore=K,K] -f cmp-topology.awk
function added(k) {
	return k == "cwsr_size" || k == "ctl_stack_size" || k == "recommended_sdma_engine_id_mask"
}
BEGIN { n = split(ignore, ig, ","); for (i = 1; i <= n; i++) skip[ig[i]] = 1; skip["capability2"] = 1 }
{
	path = $0
	nc = 0; nl = 0
	delete has
	while ((getline l < (cap "/" path)) > 0) {
		split(l, kv, " ")
		if (kv[1] in skip)
			continue
		c[++nc] = l
		has[kv[1]] = 1
	}
	close(cap "/" path)
	r = (getline l < (live "/" path))
	if (r < 0) {
		print "# missing: " path
		differ++
		files++
		next
	}
	do {
		split(l, kv, " ")
		if (!(added(kv[1]) && !(kv[1] in has)) && !(kv[1] in skip))
			v[++nl] = l
	} while ((getline l < (live "/" path)) > 0)
	close(live "/" path)
	bad = nl != nc
	for (i = 1; i <= nc && !bad; i++)
		if (c[i] != v[i])
			bad = i
	if (bad) {
		differ++
		if (differ <= 5) {
			print "# differs: " path
			for (i = 1; i <= nc || i <= nl; i++)
				if (c[i] != v[i])
					print "#   line " i ": capture \"" c[i] "\" live \"" v[i] "\""
		}
	}
	files++
	delete c
	delete v
}
END { print "files " files + 0 " differ " differ + 0 }
