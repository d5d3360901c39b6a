/* SPDX-License-Identifier: Apache-2.0 */
/*
 * yamljson — YAML (one or more documents) to JSON values with libyaml, so
 * that YAML and JSON inputs share one validation path.  Plain scalars are
 * typed as YAML 1.2's core schema does (null, booleans, integers, floats);
 * quoted ones stay strings.  Anchors and aliases are refused, and so is
 * nesting deeper than 64 containers, both in a first pass over libyaml's
 * events that stops at the first offence, before any document is built
 * (time linear in the input: the worst document within the control socket's
 * 4 MiB, docs/benchmarks.md "Parsers").
 *
 * Thread contract: none (no state); any thread.
 */
#ifndef FG_YAMLJSON_H
#define FG_YAMLJSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* A JSON array with one value per document, or NULL with a message. */
json_t *fg_yaml_load_all(const uint8_t *buf, size_t len, char *err, size_t errlen);

/* JSON or YAML: a JSON text gives a one-element array. */
json_t *fg_load_documents(const uint8_t *buf, size_t len, char *err, size_t errlen);

#endif
