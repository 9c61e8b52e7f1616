/* SPDX-License-Identifier: MIT */
/*
 * Round trip of a topology through its image (topology_image.h) for the fuzz
 * targets: what topo_to_image() writes, topo_from_image() must accept and
 * read back as the same accessible nodes.
 */
#ifndef AMDGPU_CRIU_FUZZ_TOPO_EQUAL_H
#define AMDGPU_CRIU_FUZZ_TOPO_EQUAL_H

#include "topology/topology.h"

/*
 * Packs the image of every accessible node of t, unpacks it, reads it back
 * and compares it with t (mem_banks aside: images keep only their VRAM
 * summary). fuzz_fail()s on any difference; `what` names the source.
 */
void fuzz_topo_round_trip(const struct kfd_topology *t, const char *what);

#endif
