// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the sysfs topology reader topo_load() (topology/parse.c).
 *
 * Input: a file tree in the fuzz_tree.h encoding, e.g.
 *   ==> nodes/0/properties <==
 *   simd_count 0
 * made in the scratch directory, which is then loaded as a topology root
 * (seeds: the captures in tests/fixtures/kfd-topologies). A loaded topology must
 * survive its own image unchanged (topo_equal.h): otherwise a dump would
 * record what no restore accepts. A refusal has a one-line message naming
 * the tree.
 */
#include "fuzz_common.h"
#include "fuzz_tree.h"
#include "topo_equal.h"
#include "topology/topology.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *root = fuzz_scratch();
	struct kfd_topology t;
	char err[512] = "";

	fuzz_tree_write(root, data, size);
	if (topo_load(root, &t, err, sizeof(err))) {
		fuzz_check_errmsg(err, root);
	} else {
		for (size_t i = 0; i < t.n_nodes; i++)
			FUZZ_ASSERT(t.nodes[i].index == i, "node %zu has index %u", i,
				    t.nodes[i].index);
		fuzz_topo_round_trip(&t, "sysfs tree");
		topo_free(&t);
	}
	fuzz_done();
	return 0;
}
