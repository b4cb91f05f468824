#include "test.h"
#include "net/xml.h"
#include <stdlib.h>

FL_TEST(xml_escape_writer)
{
    fl_buf_t b;
    fl_buf_init(&b, 0);
    fl_xml_elems(&b, "Key", "a<b>&\"c'\x01");
    CHECK_STR(b.ptr, "<Key>a&lt;b&gt;&amp;&quot;c&apos;&#x1;</Key>");
    fl_buf_free(&b);
}

FL_TEST(xml_reader_complete)
{
    const char *doc = "<?xml version=\"1.0\"?><CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                      "<Part><PartNumber>1</PartNumber><ETag>\"abc\"</ETag></Part>"
                      "<Part><PartNumber>2</PartNumber><ETag>&quot;def&quot;</ETag></Part></CompleteMultipartUpload>";
    fl_xml_node_t *r = fl_xml_parse(doc, strlen(doc));
    REQUIRE(r);
    CHECK_STR(r->name, "CompleteMultipartUpload");
    fl_xml_node_t *p = fl_xml_child(r, "Part");
    REQUIRE(p);
    CHECK_STR(fl_xml_child_text(p, "PartNumber"), "1");
    CHECK_STR(fl_xml_child_text(p->next, "ETag"), "\"def\"");
    fl_xml_free(r);
}

FL_TEST(xml_reader_rejects)
{
    const char *bad[] = {
        "<a><b></a>",
        "<!DOCTYPE a [<!ENTITY x \"y\">]><a>&x;</a>",
        "<a/><b/>",
        "",
        "<a><b><c><d><e><f><g><h><i><j><k><l><m><n><o><p><q>x</q></p></o></n></m></l></k></j></i></h></g></f></e></d></c></b></a>",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fl_xml_node_t *r = fl_xml_parse(bad[i], strlen(bad[i]));
        if (r) FL_FAIL("accepted: %s", bad[i]);
        fl_xml_free(r);
    }
}
