/* S3 XML: escaping writer and a bounded expat-based tree reader. */
#include "net/xml.h"
#include "base/mem.h"
#include <expat.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

fl_err_t fl_xml_escape(fl_buf_t *b, const char *s, size_t n)
{
    size_t run = 0;
    fl_err_t e = FL_OK;
    for (size_t i = 0; i < n && !e; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *rep = NULL;
        char tmp[8];
        switch (c) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '"': rep = "&quot;"; break;
        case '\'': rep = "&apos;"; break;
        default:
            if (c < 0x20 && c != '\t' && c != '\n') {
                snprintf(tmp, sizeof tmp, "&#x%X;", c);
                rep = tmp;
            }
        }
        if (!rep) { run++; continue; }
        e = fl_buf_add(b, s + i - run, run);
        run = 0;
        if (!e) e = fl_buf_adds(b, rep);
    }
    if (!e) e = fl_buf_add(b, s + n - run, run);
    return e;
}

fl_err_t fl_xml_open(fl_buf_t *b, const char *tag) { return fl_buf_printf(b, "<%s>", tag); }
fl_err_t fl_xml_close(fl_buf_t *b, const char *tag) { return fl_buf_printf(b, "</%s>", tag); }

fl_err_t fl_xml_elem(fl_buf_t *b, const char *tag, const char *text, size_t n)
{
    fl_err_t e = fl_xml_open(b, tag);
    if (!e) e = fl_xml_escape(b, text, n);
    if (!e) e = fl_xml_close(b, tag);
    return e;
}

fl_err_t fl_xml_elems(fl_buf_t *b, const char *tag, const char *text)
{
    return fl_xml_elem(b, tag, text ? text : "", text ? strlen(text) : 0);
}

fl_err_t fl_xml_elemf(fl_buf_t *b, const char *tag, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return FL_ERR_INVALID;
    return fl_xml_elem(b, tag, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

typedef struct rd {
    XML_Parser p;
    fl_xml_node_t *root, *cur;
    int nodes, depth;
    bool bad;
    fl_buf_t text; /* text of the current element */
} rd_t;

static void node_free(fl_xml_node_t *n)
{
    while (n) {
        fl_xml_node_t *next = n->next;
        node_free(n->child);
        free(n->name);
        free(n->text);
        free(n);
        n = next;
    }
}

void fl_xml_free(fl_xml_node_t *root) { node_free(root); }

static void flush_text(rd_t *r)
{
    if (!r->cur) return;
    fl_xml_node_t *n = r->cur;
    size_t old = n->text_len;
    n->text = fl_realloc(n->text, old + r->text.len + 1);
    memcpy(n->text + old, r->text.ptr ? r->text.ptr : "", r->text.len);
    n->text_len = old + r->text.len;
    n->text[n->text_len] = 0;
    fl_buf_reset(&r->text);
}

static void XMLCALL on_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
    rd_t *r = ud;
    (void)attrs;
    if (r->bad) return;
    if (++r->nodes > FL_XML_MAX_NODES || ++r->depth > FL_XML_MAX_DEPTH ||
        (!r->cur && r->root)) {
        r->bad = true;
        XML_StopParser(r->p, XML_FALSE);
        return;
    }
    flush_text(r);
    fl_xml_node_t *n = fl_calloc(1, sizeof *n);
    const char *local = strrchr(name, '\x01'); /* namespace separator */
    n->name = fl_strdup(local ? local + 1 : name);
    n->text = fl_strdup("");
    n->parent = r->cur;
    if (!r->cur) {
        r->root = n;
    } else {
        fl_xml_node_t **pp = &r->cur->child;
        while (*pp) pp = &(*pp)->next;
        *pp = n;
    }
    r->cur = n;
}

static void XMLCALL on_end(void *ud, const XML_Char *name)
{
    rd_t *r = ud;
    (void)name;
    if (r->bad || !r->cur) return;
    flush_text(r);
    r->cur = r->cur->parent;
    r->depth--;
}

static void XMLCALL on_text(void *ud, const XML_Char *s, int len)
{
    rd_t *r = ud;
    if (r->bad || !r->cur) return;
    if (fl_buf_add(&r->text, s, (size_t)len)) {
        r->bad = true;
        XML_StopParser(r->p, XML_FALSE);
    }
}

static void XMLCALL on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
                               const XML_Char *pubid, int has_internal)
{
    rd_t *r = ud;
    (void)name, (void)sysid, (void)pubid, (void)has_internal;
    r->bad = true;
    XML_StopParser(r->p, XML_FALSE);
}

fl_xml_node_t *fl_xml_parse(const char *doc, size_t len)
{
    rd_t r = { 0 };
    fl_buf_init(&r.text, 1 << 20);
    r.p = XML_ParserCreateNS(NULL, '\x01');
    if (!r.p) return NULL;
    XML_SetUserData(r.p, &r);
    XML_SetElementHandler(r.p, on_start, on_end);
    XML_SetCharacterDataHandler(r.p, on_text);
    XML_SetStartDoctypeDeclHandler(r.p, on_doctype);
    int ok = XML_Parse(r.p, doc, (int)(len > 0x7fffffff ? 0x7fffffff : len), XML_TRUE);
    XML_ParserFree(r.p);
    fl_buf_free(&r.text);
    if (!ok || r.bad || !r.root || r.cur) {
        node_free(r.root);
        return NULL;
    }
    return r.root;
}

fl_xml_node_t *fl_xml_child(const fl_xml_node_t *n, const char *name)
{
    for (fl_xml_node_t *c = n ? n->child : NULL; c; c = c->next)
        if (strcmp(c->name, name) == 0) return c;
    return NULL;
}

const char *fl_xml_child_text(const fl_xml_node_t *n, const char *name)
{
    fl_xml_node_t *c = fl_xml_child(n, name);
    return c ? c->text : NULL;
}
