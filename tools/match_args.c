// SPDX-License-Identifier: MIT
/*
 * Inputs of the commands that run the matcher (match, check): node lists
 * from the command line and topologies, each reported with the command and
 * the option it came from.
 */
#include <errno.h>
#include <stdio.h>

#include "tools/cli.h"

int match_parse_list(const char *cmd, const char *opt, const char *text, struct nodelist *list)
{
	char err[256];
	int ret;

	if (!text)
		return 0;
	ret = nodelist_parse(text, list, err, sizeof(err));
	if (ret)
		cli_err("%s: %s '%s': %s", cmd, opt, text, err);
	return ret;
}

int match_check_gpu_list(const char *cmd, const char *opt, const struct kfd_topology *topo,
			 const struct nodelist *list)
{
	for (size_t i = 0; i < list->n; i++) {
		const struct kfd_node *n = topo_node(topo, list->nodes[i]);
		const char *problem = NULL;

		if (!n)
			problem = "does not exist";
		else if (!n->accessible)
			problem = "is not accessible";
		else if (!n->is_gpu)
			problem = "is not a GPU (CPU node)";
		if (problem) {
			cli_err("%s: %s: node %u %s", cmd, opt, list->nodes[i], problem);
			return -EINVAL;
		}
	}
	return 0;
}

int match_load_topology(const char *cmd, const char *opt, const char *root,
			struct kfd_topology *topo)
{
	char err[512];
	int ret;

	ret = topo_load(root, topo, err, sizeof(err));
	if (ret)
		cli_err("%s: %s: %s", cmd, opt, err); /* err names the file */
	return ret;
}
