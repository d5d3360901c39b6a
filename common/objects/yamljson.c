/* SPDX-License-Identifier: Apache-2.0 */
/* yamljson — see yamljson.h. */
#include "yamljson.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define YAML_MAX_DEPTH 64

static json_t *scalar(const yaml_node_t *n)
{
	const char *v = (const char *)n->data.scalar.value;
	size_t len = n->data.scalar.length;
	if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return json_stringn(v, len);
	if (len == 0 || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL"))
		return json_null();
	if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "TRUE"))
		return json_true();
	if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "FALSE"))
		return json_false();
	char *end;
	errno = 0;
	long long i = strtoll(v, &end, 10);
	if (!errno && end == v + len && len && (v[0] == '-' || v[0] == '+' || (v[0] >= '0' && v[0] <= '9')))
		return json_integer(i);
	double d = strtod(v, &end);
	if (end == v + len && len && strspn(v, "+-0123456789.eE") == len)
		return json_real(d);
	return json_stringn(v, len);
}

static json_t *convert(yaml_document_t *doc, yaml_node_t *n, int depth, char *err, size_t errlen)
{
	if (!n || depth > YAML_MAX_DEPTH) {
		snprintf(err, errlen, "YAML nested deeper than %d levels", YAML_MAX_DEPTH);
		return NULL;
	}
	if (n->type == YAML_SCALAR_NODE)
		return scalar(n);
	if (n->type == YAML_SEQUENCE_NODE) {
		json_t *a = json_array();
		for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
			json_t *v = convert(doc, yaml_document_get_node(doc, *it), depth + 1, err, errlen);
			if (!v) {
				json_decref(a);
				return NULL;
			}
			json_array_append_new(a, v);
		}
		return a;
	}
	if (n->type == YAML_MAPPING_NODE) {
		json_t *o = json_object();
		for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
			yaml_node_t *k = yaml_document_get_node(doc, p->key);
			if (!k || k->type != YAML_SCALAR_NODE) {
				snprintf(err, errlen, "YAML mapping keys must be scalars");
				json_decref(o);
				return NULL;
			}
			json_t *v = convert(doc, yaml_document_get_node(doc, p->value), depth + 1, err, errlen);
			if (!v) {
				json_decref(o);
				return NULL;
			}
			json_object_setn_new(o, (const char *)k->data.scalar.value, k->data.scalar.length, v);
		}
		return o;
	}
	snprintf(err, errlen, "unsupported YAML node");
	return NULL;
}

/*
 * The first pass over the events, before any document is built: aliases
 * would let a small document expand without bound, and libyaml's scanner
 * spends time linear in the flow depth on every token (its simple-key
 * stack), so a 64 000-deep "[[[[..." costs quadratic time in the loader.
 * Both are refused here as the events stream by: the scanner never runs
 * more than its short look-ahead past the first container too deep.
 */
static int refuse_early(const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	yaml_parser_t p;
	yaml_event_t ev;
	int refused = 0, done = 0, depth = 0;
	yaml_parser_initialize(&p);
	yaml_parser_set_input_string(&p, buf, len);
	while (!done) {
		if (!yaml_parser_parse(&p, &ev))
			break; /* the loader reports the syntax error with its position */
		if (ev.type == YAML_ALIAS_EVENT) {
			refused = 1;
			snprintf(err, errlen, "YAML aliases are not supported (line %zu)", ev.start_mark.line + 1);
		} else if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT) {
			if (++depth > YAML_MAX_DEPTH) {
				refused = 1;
				snprintf(err, errlen, "YAML nested deeper than %d levels (line %zu column %zu)",
					 YAML_MAX_DEPTH, ev.start_mark.line + 1, ev.start_mark.column + 1);
			}
		} else if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT) {
			depth--;
		}
		done = ev.type == YAML_STREAM_END_EVENT || refused;
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	return refused;
}

json_t *fg_yaml_load_all(const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	if (refuse_early(buf, len, err, errlen))
		return NULL;
	yaml_parser_t p;
	yaml_parser_initialize(&p);
	yaml_parser_set_input_string(&p, buf, len);
	json_t *docs = json_array();
	for (;;) {
		yaml_document_t doc;
		if (!yaml_parser_load(&p, &doc)) {
			snprintf(err, errlen, "YAML error at line %zu column %zu: %s", p.problem_mark.line + 1,
				 p.problem_mark.column + 1, p.problem ? p.problem : "syntax error");
			json_decref(docs);
			docs = NULL;
			break;
		}
		yaml_node_t *root = yaml_document_get_root_node(&doc);
		if (!root) { /* end of the stream */
			yaml_document_delete(&doc);
			break;
		}
		json_t *v = convert(&doc, root, 0, err, errlen);
		yaml_document_delete(&doc);
		if (!v) {
			json_decref(docs);
			docs = NULL;
			break;
		}
		if (!json_is_null(v))
			json_array_append_new(docs, v);
		else
			json_decref(v);
	}
	yaml_parser_delete(&p);
	return docs;
}

json_t *fg_load_documents(const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	size_t i = 0;
	while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r'))
		i++;
	if (i < len && (buf[i] == '{' || buf[i] == '[')) {
		json_error_t je;
		json_t *v = json_loadb((const char *)buf, len, JSON_REJECT_DUPLICATES, &je);
		if (!v) {
			snprintf(err, errlen, "malformed JSON at line %d column %d: %s", je.line, je.column, je.text);
			return NULL;
		}
		json_t *docs = json_array();
		json_array_append_new(docs, v);
		return docs;
	}
	return fg_yaml_load_all(buf, len, err, errlen);
}
