// SPDX-License-Identifier: MIT
/*
 * Aligned text tables: collect all rows first, because column widths depend
 * on the widest cell, then print.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

void table_init(struct table *t, const struct table_column *cols, size_t n_cols)
{
	*t = (struct table){.cols = cols, .n_cols = n_cols};
}

static int table_reserve_row(struct table *t)
{
	size_t cap = t->cap_rows ? t->cap_rows * 2 : 16;
	char **cells;

	if (t->n_rows < t->cap_rows)
		return 0;
	cells = reallocarray(t->cells, cap * t->n_cols, sizeof(*cells));
	if (!cells)
		return -ENOMEM;
	t->cells = cells;
	t->cap_rows = cap;
	return 0;
}

int table_add_row(struct table *t, const char *const cells[])
{
	char **row;
	int ret;

	ret = table_reserve_row(t);
	if (ret)
		return ret;
	row = &t->cells[t->n_rows * t->n_cols];
	for (size_t c = 0; c < t->n_cols; c++) {
		row[c] = strdup(cells[c] ? cells[c] : "");
		if (!row[c]) {
			while (c--)
				free(row[c]);
			return -ENOMEM;
		}
	}
	t->n_rows++;
	return 0;
}

static const char *table_cell(const struct table *t, size_t row, size_t col)
{
	return t->cells[row * t->n_cols + col];
}

static size_t column_width(const struct table *t, size_t col)
{
	size_t width = strlen(t->cols[col].header);

	for (size_t r = 0; r < t->n_rows; r++) {
		size_t len = strlen(table_cell(t, r, col));

		if (len > width)
			width = len;
	}
	return width;
}

/* Index past the last non-empty cell, so rows end without trailing blanks. */
static size_t used_columns(const char *const cells[], size_t n_cols)
{
	while (n_cols && !cells[n_cols - 1][0])
		n_cols--;
	return n_cols;
}

static void print_line(const struct table *t, const size_t *widths, const char *const cells[],
		       FILE *out)
{
	size_t n = used_columns(cells, t->n_cols);

	for (size_t c = 0; c < n; c++) {
		int w = (int)widths[c];
		const char *sep = c + 1 < n ? "  " : "";

		if (t->cols[c].right)
			fprintf(out, "%*s%s", w, cells[c], sep);
		else if (c + 1 < n)
			fprintf(out, "%-*s%s", w, cells[c], sep);
		else
			fputs(cells[c], out);
	}
	fputc('\n', out);
}

void table_print(const struct table *t, FILE *out)
{
	size_t widths[t->n_cols ? t->n_cols : 1];
	const char *headers[t->n_cols ? t->n_cols : 1];

	for (size_t c = 0; c < t->n_cols; c++) {
		widths[c] = column_width(t, c);
		headers[c] = t->cols[c].header;
	}
	print_line(t, widths, headers, out);
	for (size_t r = 0; r < t->n_rows; r++)
		print_line(t, widths, (const char *const *)&t->cells[r * t->n_cols], out);
}

void table_free(struct table *t)
{
	for (size_t i = 0; i < t->n_rows * t->n_cols; i++)
		free(t->cells[i]);
	free(t->cells);
	*t = (struct table){.cols = t->cols, .n_cols = t->n_cols};
}
