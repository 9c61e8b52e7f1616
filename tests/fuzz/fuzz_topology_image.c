// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the topology image reader (images/topology_image.h).
 *
 * Input: one packed KfdTopologyEntry, as recorded inside amdgpu-kfd-<id>.img
 * and amdgpu-render-<id>.img. What topo_from_image() accepts must survive
 * topo_to_image() -> pack -> unpack -> topo_from_image() unchanged
 * (topo_equal.h); a refusal has a one-line message.
 */
#include "fuzz_common.h"
#include "topo_equal.h"
#include "images/topology_image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	KfdTopologyEntry *e = kfd_topology_entry__unpack(NULL, size, data);
	struct kfd_topology t;
	char err[512] = "";

	if (!e)
		return 0;
	if (topo_from_image(e, &t, err, sizeof(err))) {
		fuzz_check_errmsg(err, "topology image");
	} else {
		fuzz_topo_round_trip(&t, "image");
		topo_free(&t);
	}
	kfd_topology_entry__free_unpacked(e, NULL);
	return 0;
}
