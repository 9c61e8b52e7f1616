// SPDX-License-Identifier: MIT
/*
 * amdgpu-criu cdi [--sysfs DIR] [--kind KIND] [--output FILE]
 *
 * A CDI spec (Container Device Interface, cncf-tags/container-device-interface
 * SPEC.md) of the GPUs of a KFD topology, for container runtimes that take
 * `--device amd.com/gpu=0`:
 *   - one device per usable GPU node (accessible, a gpu_id, a render node),
 *     named by its position among them in KFD node order ("0", "1", ...), with
 *     /dev/dri/renderD<minor> and /dev/kfd; its KFD node, gpu_id, PCI address,
 *     unique_id and ASIC name as annotations (a PCI address holds ':', which
 *     SPEC.md's device names do not, and which docker's and podman's --device
 *     take as a separator);
 *   - a device "all" with every render node and /dev/kfd.
 * Device nodes carry path and type only: the runtime reads major and minor
 * from the host's node when it injects the device (KFD's major is dynamic).
 * Annotations need cdiVersion 0.6.0, the lowest that takes them.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fullio.h"
#include "topology/gpu_select.h"
#include "tools/cli.h"

#define CDI_VERSION	 "0.6.0"
#define CDI_DEFAULT_KIND "amd.com/gpu"
#define CDI_KFD_PATH	 "/dev/kfd"
/* annotation keys: a prefix (a DNS label) and a name, as Kubernetes' annotations */
#define CDI_ANNOTATION(name) "amdgpu-criu/" name

struct cdi_opts {
	const char *root;   /* NULL: the local sysfs */
	const char *kind;   /* vendor/class */
	const char *output; /* NULL: stdout */
};

void cmd_cdi_usage(FILE *out)
{
	fprintf(out,
		"usage: " CLI_NAME " cdi [--sysfs DIR] [--kind KIND] [--output FILE]\n\n"
		"Print a CDI spec (Container Device Interface, cdiVersion " CDI_VERSION
		") of the GPUs: one\n"
		"device per GPU with a gpu_id and a render node, named 0, 1, ... in KFD node\n"
		"order, holding its render node and /dev/kfd; and a device 'all' with every\n"
		"GPU. Each GPU's KFD node, gpu_id, PCI address and unique_id are annotations.\n\n"
		"options:\n"
		"  -s, --sysfs DIR    read the topology under DIR (a directory holding nodes/)\n"
		"                     instead of " KFD_SYSFS_TOPOLOGY "\n"
		"  -k, --kind KIND    the devices' kind, vendor/class (default " CDI_DEFAULT_KIND
		")\n"
		"  -o, --output FILE  write the spec to FILE (a new file renamed over it)\n"
		"                     instead of standard output\n"
		"  -h, --help         show this help\n\n"
		"exit status: 0 written, 2 usage error, no topology, no usable GPU, or FILE\n"
		"not written\n");
}

/* Returns -1 to go on, or the exit status to end with. */
static int parse_cdi_opts(int argc, char *argv[], struct cdi_opts *opts)
{
	static const struct option longopts[] = {
		{"sysfs", required_argument, NULL, 's'},
		{"kind", required_argument, NULL, 'k'},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:k:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			opts->root = optarg;
			break;
		case 'k':
			opts->kind = optarg;
			break;
		case 'o':
			opts->output = optarg;
			break;
		case 'h':
			cmd_cdi_usage(stdout);
			return CLI_EXIT_OK;
		default:
			return cli_bad_option("cdi", c, argv);
		}
	}
	if (optind < argc)
		return cli_extra_args("cdi", argc, argv);
	return -1;
}

/* ---- the kind ----------------------------------------------------------------- */

static bool is_letter(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_alnum(char c)
{
	return is_letter(c) || (c >= '0' && c <= '9');
}

/*
 * A vendor or class name of CDI: a letter first, an alphanumeric last,
 * alphanumerics, '-', '_' and '.' between; at most max characters.
 */
static bool kind_part_ok(const char *s, size_t len, size_t max)
{
	if (!len || len > max || !is_letter(s[0]) || !is_alnum(s[len - 1]))
		return false;
	for (size_t i = 1; i < len; i++)
		if (!is_alnum(s[i]) && !strchr("-_.", s[i]))
			return false;
	return true;
}

/* "vendor.com/class": a DNS-like vendor of up to 253 characters, a class of up to 63. */
static int check_kind(const char *kind)
{
	const char *slash = strchr(kind, '/');

	if (slash && kind_part_ok(kind, (size_t)(slash - kind), 253) &&
	    kind_part_ok(slash + 1, strlen(slash + 1), 63))
		return 0;
	cli_err("cdi: --kind: not a CDI kind (vendor.com/class: letters, digits, '-', '_', '.')");
	return -EINVAL;
}

/* ---- the spec ------------------------------------------------------------------- */

/* Append {"path": path, "type": "c"} to arr. 0 or -ENOMEM. */
static int append_device_node(struct json_object *arr, const char *path)
{
	struct json_object *node = json_object_new_object();

	if (!node)
		return -ENOMEM;
	if (json_put_str(node, "path", path) || json_put_str(node, "type", "c")) {
		json_object_put(node);
		return -ENOMEM;
	}
	return json_append(arr, node);
}

static int append_render_node(struct json_object *arr, const struct kfd_node *n)
{
	char path[FMT_SHORT + 16], render[FMT_SHORT];

	fmt_render_node((uint32_t)n->props.drm_render_minor, render, sizeof(render));
	snprintf(path, sizeof(path), "/dev/dri/%s", render);
	return append_device_node(arr, path);
}

/* A device: {"name": name, ["annotations": annotations,] "containerEdits": {"deviceNodes"}}. */
static struct json_object *device_json(const char *name, struct json_object *annotations,
				       struct json_object *nodes)
{
	struct json_object *dev = json_object_new_object();
	struct json_object *edits = json_object_new_object();
	int ret = dev && edits ? 0 : -ENOMEM;

	ret = ret ?: append_device_node(nodes, CDI_KFD_PATH);
	ret = ret ?: json_put_str(dev, "name", name);
	if (annotations && !ret) {
		ret = json_put(dev, "annotations", annotations);
		annotations = NULL;
	}
	if (!ret) {
		ret = json_put(edits, "deviceNodes", nodes);
		nodes = NULL;
	}
	if (!ret) {
		ret = json_put(dev, "containerEdits", edits);
		edits = NULL;
	}
	json_object_put(annotations);
	json_object_put(nodes);
	json_object_put(edits);
	if (ret) {
		json_object_put(dev);
		return NULL;
	}
	return dev;
}

/* What finds the GPU again: its KFD node, gpu_id, PCI address, unique_id, ASIC name. */
static struct json_object *gpu_annotations(const struct kfd_node *n)
{
	struct json_object *ann = json_object_new_object();
	char node[FMT_SHORT], gpu_id[FMT_SHORT], pci[FMT_SHORT], unique_id[FMT_SHORT];
	int ret = ann ? 0 : -ENOMEM;

	snprintf(node, sizeof(node), "%u", n->index);
	snprintf(gpu_id, sizeof(gpu_id), "%u", n->gpu_id);
	snprintf(unique_id, sizeof(unique_id), "0x%016" PRIx64, n->props.unique_id);
	fmt_pci_address(n, pci, sizeof(pci));
	ret = ret ?: json_put_str(ann, CDI_ANNOTATION("kfd-node"), node);
	ret = ret ?: json_put_str(ann, CDI_ANNOTATION("gpu-id"), gpu_id);
	ret = ret ?: json_put_str(ann, CDI_ANNOTATION("pci-address"), pci);
	if (n->props.unique_id)
		ret = ret ?: json_put_str(ann, CDI_ANNOTATION("unique-id"), unique_id);
	if (n->name[0])
		ret = ret ?: json_put_untrusted_str(ann, CDI_ANNOTATION("name"), n->name);
	if (ret) {
		json_object_put(ann);
		return NULL;
	}
	return ann;
}

static struct json_object *gpu_device_json(const struct kfd_node *n, size_t position)
{
	struct json_object *nodes = json_object_new_array();
	struct json_object *ann = gpu_annotations(n);
	char name[FMT_SHORT];

	snprintf(name, sizeof(name), "%zu", position);
	if (!nodes || !ann || append_render_node(nodes, n)) {
		json_object_put(nodes);
		json_object_put(ann);
		return NULL;
	}
	return device_json(name, ann, nodes);
}

static struct json_object *all_device_json(const struct kfd_topology *topo, const uint32_t *gpus,
					   size_t n_gpus)
{
	struct json_object *nodes = json_object_new_array();

	for (size_t i = 0; nodes && i < n_gpus; i++) {
		if (append_render_node(nodes, topo_node(topo, gpus[i]))) {
			json_object_put(nodes);
			nodes = NULL;
		}
	}
	return nodes ? device_json("all", NULL, nodes) : NULL;
}

static struct json_object *cdi_spec_json(const struct kfd_topology *topo, const char *kind,
					 const uint32_t *gpus, size_t n_gpus)
{
	struct json_object *doc = json_object_new_object();
	struct json_object *devices = json_object_new_array();
	int ret = doc && devices ? 0 : -ENOMEM;

	ret = ret ?: json_put_str(doc, "cdiVersion", CDI_VERSION);
	ret = ret ?: json_put_str(doc, "kind", kind);
	for (size_t i = 0; !ret && i < n_gpus; i++)
		ret = json_append(devices, gpu_device_json(topo_node(topo, gpus[i]), i));
	ret = ret ?: json_append(devices, all_device_json(topo, gpus, n_gpus));
	if (!ret) {
		ret = json_put(doc, "devices", devices);
		devices = NULL;
	}
	json_object_put(devices);
	if (ret) {
		json_object_put(doc);
		return NULL;
	}
	return doc;
}

/* ---- the GPUs -------------------------------------------------------------------- */

/*
 * The GPU nodes a device is made for, in node order: those a restore could
 * use (gpu_select.h) whose render minor is not 0. Their count, or -ENODEV
 * (reported).
 */
static ssize_t cdi_gpus(const struct kfd_topology *topo, const char *root, uint32_t *gpus)
{
	static const struct gpu_select every = {0};
	size_t n = gpu_select_nodes(&every, topo, gpus, NULL), kept = 0, gpu_nodes = 0;

	for (size_t i = 0; i < n; i++)
		if (topo_node(topo, gpus[i])->props.drm_render_minor)
			gpus[kept++] = gpus[i];
	if (kept)
		return (ssize_t)kept;
	for (size_t i = 0; i < topo->n_nodes; i++)
		gpu_nodes += topo->nodes[i].is_gpu || !topo->nodes[i].accessible;
	cli_err("cdi: %s: no usable GPU: none of its %zu GPU node%s is accessible "
		"with a gpu_id and a render node",
		root, gpu_nodes, gpu_nodes == 1 ? "" : "s");
	return -ENODEV;
}

/* ---- output ---------------------------------------------------------------------- */

/* Write text and a newline to a new file beside path, then rename it over path. 0 or -errno. */
static int write_replace(const char *path, const char *text)
{
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	size_t len = strlen(text);
	char *tmp = NULL;
	int fd = -1, ret = 0;

	/* ".<base>.XXXXXX" in path's directory: rename() stays within one file system */
	if (asprintf(&tmp, "%.*s.%s.XXXXXX", (int)(base - path), path, base) < 0) {
		tmp = NULL;
		ret = -ENOMEM;
	}
	if (!ret && (fd = mkstemp(tmp)) < 0)
		ret = -errno;
	if (!ret && fchmod(fd, 0644))
		ret = -errno;
	ret = ret ?: pwrite_full(fd, text, len, 0);
	ret = ret ?: pwrite_full(fd, "\n", 1, len);
	if (!ret && fsync(fd))
		ret = -errno;
	if (fd >= 0 && close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret && fd >= 0)
		unlink(tmp);
	free(tmp);
	return ret;
}

static int put_spec(const struct cdi_opts *opts, struct json_object *doc)
{
	const char *text = json_text(doc);
	int ret;

	if (!text) {
		cli_err("cdi: out of memory");
		return -ENOMEM;
	}
	if (!opts->output)
		return json_print(doc);
	ret = write_replace(opts->output, text);
	if (ret)
		cli_err("cdi: cannot write %s: %s", opts->output, strerror(-ret));
	return ret;
}

/* ---- command --------------------------------------------------------------------- */

static int run_cdi(const struct cdi_opts *opts, const struct kfd_topology *topo, const char *root)
{
	uint32_t *gpus = calloc(topo->n_nodes ? topo->n_nodes : 1, sizeof(*gpus));
	struct json_object *doc = NULL;
	ssize_t n = gpus ? cdi_gpus(topo, root, gpus) : -ENOMEM;
	int ret = n < 0 ? (int)n : 0;

	if (!ret) {
		doc = cdi_spec_json(topo, opts->kind, gpus, (size_t)n);
		ret = doc ? put_spec(opts, doc) : -ENOMEM;
	}
	if (ret == -ENOMEM && !doc)
		cli_err("cdi: out of memory");
	json_object_put(doc);
	free(gpus);
	return ret;
}

int cmd_cdi(int argc, char *argv[])
{
	struct cdi_opts opts = {.kind = CDI_DEFAULT_KIND};
	struct kfd_topology topo = {0};
	char err[512];
	const char *root;
	int status, ret;

	status = parse_cdi_opts(argc, argv, &opts);
	if (status >= 0)
		return status;
	if (check_kind(opts.kind))
		return CLI_EXIT_USAGE;
	root = opts.root ? opts.root : KFD_SYSFS_TOPOLOGY;
	ret = topo_load(root, &topo, err, sizeof(err));
	if (ret) {
		cli_err("cdi: %s", err);
		return CLI_EXIT_USAGE;
	}
	ret = run_cdi(&opts, &topo, root);
	topo_free(&topo);
	return ret ? CLI_EXIT_USAGE : CLI_EXIT_OK;
}
