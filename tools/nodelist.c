// SPDX-License-Identifier: MIT
/*
 * Node lists as given on the command line: "2,3,5-7". Indexes are KFD node
 * numbers (nodes/N), not GPU ordinals.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

static bool nodelist_contains(const struct nodelist *list, uint32_t node)
{
	for (size_t i = 0; i < list->n; i++)
		if (list->nodes[i] == node)
			return true;
	return false;
}

/*
 * One decimal index at *pos; advances *pos past it. strtoul alone would take
 * signs and leading blanks, so require a digit first.
 */
static int parse_index(const char **pos, uint32_t *out)
{
	unsigned long v;
	char *end;

	if (**pos < '0' || **pos > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(*pos, &end, 10);
	if (errno == ERANGE || v > UINT32_MAX)
		return -ERANGE;
	*out = (uint32_t)v;
	*pos = end;
	return 0;
}

static int nodelist_append(struct nodelist *list, uint32_t node, char *errbuf, size_t errlen)
{
	uint32_t *nodes;

	if (nodelist_contains(list, node)) {
		snprintf(errbuf, errlen, "node %u listed twice", node);
		return -EINVAL;
	}
	if (list->n >= NODELIST_MAX) {
		snprintf(errbuf, errlen, "more than %d nodes", NODELIST_MAX);
		return -ERANGE;
	}
	/* grown one entry at a time: lists are short and the bound above keeps this small */
	nodes = realloc(list->nodes, (list->n + 1) * sizeof(*nodes));
	if (!nodes) {
		snprintf(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	nodes[list->n++] = node;
	list->nodes = nodes;
	return 0;
}

/* One item, "N" or "A-B", at *pos; appends its nodes. */
static int parse_item(const char **pos, struct nodelist *list, char *errbuf, size_t errlen)
{
	uint32_t first, last;
	int ret;

	ret = parse_index(pos, &first);
	if (ret)
		goto bad;
	last = first;
	if (**pos == '-') {
		(*pos)++;
		ret = parse_index(pos, &last);
		if (ret)
			goto bad;
		if (last < first) {
			snprintf(errbuf, errlen, "descending range %u-%u", first, last);
			return -EINVAL;
		}
	}
	for (uint64_t node = first; node <= last; node++) {
		ret = nodelist_append(list, (uint32_t)node, errbuf, errlen);
		if (ret)
			return ret;
	}
	return 0;
bad:
	if (ret == -ERANGE)
		snprintf(errbuf, errlen, "node index out of range");
	else
		snprintf(errbuf, errlen, "expected a node index at '%s'", **pos ? *pos : "(end)");
	return ret;
}

int nodelist_parse(const char *text, struct nodelist *out, char *errbuf, size_t errlen)
{
	const char *pos = text;
	int ret;

	*out = (struct nodelist){0};
	for (;;) {
		ret = parse_item(&pos, out, errbuf, errlen);
		if (ret)
			goto fail;
		if (*pos == '\0')
			return 0;
		if (*pos != ',') {
			snprintf(errbuf, errlen, "unexpected '%c' (expected ',' or '-')", *pos);
			ret = -EINVAL;
			goto fail;
		}
		pos++;
	}
fail:
	nodelist_free(out);
	return ret;
}

void nodelist_free(struct nodelist *list)
{
	free(list->nodes);
	list->nodes = NULL;
	list->n = 0;
}

/* Length of the run of consecutive indexes starting at nodes[i]. */
static size_t run_length(const uint32_t *nodes, size_t n, size_t i)
{
	size_t len = 1;

	while (i + len < n && nodes[i + len] == nodes[i] + len)
		len++;
	return len;
}

char *nodelist_format(const uint32_t *nodes, size_t n, char *buf, size_t len)
{
	size_t used = 0;

	if (len)
		buf[0] = '\0';
	for (size_t i = 0; i < n && used < len;) {
		size_t run = run_length(nodes, n, i);
		const char *sep = i ? "," : "";

		if (run >= 3) {
			used += snprintf(buf + used, len - used, "%s%u-%u", sep, nodes[i],
					 nodes[i + run - 1]);
			i += run;
		} else {
			used += snprintf(buf + used, len - used, "%s%u", sep, nodes[i]);
			i++;
		}
	}
	return buf;
}
