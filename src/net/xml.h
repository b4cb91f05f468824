/* XML for S3 bodies: a tiny escaping writer for responses, and a bounded
 * reader (expat) that turns a small request document into an element tree.
 * Request documents (CompleteMultipartUpload, DeleteObjects) are small and
 * shallow; the reader caps bytes, elements and depth. */
#ifndef FL_NET_XML_H
#define FL_NET_XML_H
#include <stddef.h>
#include <stdbool.h>
#include "base/buf.h"
#include "base/limits.h"

/* ---- writer ---- */
/* Appends text with &, <, >, ", ' escaped (and control characters as &#xN;). */
fl_err_t fl_xml_escape(fl_buf_t *b, const char *s, size_t n);
fl_err_t fl_xml_open(fl_buf_t *b, const char *tag);
fl_err_t fl_xml_close(fl_buf_t *b, const char *tag);
/* <tag>escaped text</tag> */
fl_err_t fl_xml_elem(fl_buf_t *b, const char *tag, const char *text, size_t n);
fl_err_t fl_xml_elems(fl_buf_t *b, const char *tag, const char *text);
fl_err_t fl_xml_elemf(fl_buf_t *b, const char *tag, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- reader ---- */
typedef struct fl_xml_node {
    char *name;                 /* local name (namespace prefix stripped) */
    char *text;                 /* concatenated character data, NUL-terminated */
    size_t text_len;
    struct fl_xml_node *parent, *child, *next;
} fl_xml_node_t;


/* Parses doc into a tree; returns the root or NULL if malformed or over a cap.
 * Free with fl_xml_free. DTDs/entities are refused. */
fl_xml_node_t *fl_xml_parse(const char *doc, size_t len);
void fl_xml_free(fl_xml_node_t *root);
/* First child element with the given name, or NULL. */
fl_xml_node_t *fl_xml_child(const fl_xml_node_t *n, const char *name);
/* Text of the first child with name, or NULL. */
const char *fl_xml_child_text(const fl_xml_node_t *n, const char *name);
#endif
