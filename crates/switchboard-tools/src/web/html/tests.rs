//! The HTML stripper on the markup pages are made of.

use super::*;

#[test]
fn scripts_styles_and_comments_vanish_and_blocks_become_lines() {
    let page = readable(
        "<!DOCTYPE html><html><head><title> A &amp; B </title>\
         <style>p { color: red }</style><script>if (a < b) { x = '</p>' }</script></head>\
         <body><!-- hidden --><h1>Hello,&nbsp;world</h1><p>One   two\n three</p>\
         <div>Line<br>break</div><ul><li>first</li><li>second</li></ul>\
         <noscript>enable js</noscript><svg><g><svg></svg><text>drawn</text></g></svg>\
         <p>after</p><SCRIPT type=module>gone()</SCRIPT></body></html>",
    );
    assert_eq!(page.title.as_deref(), Some("A & B"));
    assert_eq!(
        page.text,
        "# Hello, world\n\nOne two three\n\nLine\nbreak\n\n- first\n- second\n\nafter"
    );
}

#[test]
fn entities_decode_and_unknown_ones_stay() {
    for (input, expected) in [
        ("Fish &amp; chips", "Fish & chips"),
        ("Fish & chips", "Fish & chips"),
        ("&lt;b&gt;", "<b>"),
        ("&#8364;5 &#x24;6 &#X1F600;", "€5 $6 😀"),
        ("caf&eacute; na&iuml;ve &Uuml;ber", "café naïve Über"),
        ("&#150; &#151;", "– —"),
        ("&bogus; &amp", "&bogus; &amp"),
        ("&#0; &#xD800;", "\u{fffd} \u{fffd}"),
        ("AT&T;", "AT&T;"),
    ] {
        assert_eq!(decode_entities(input), expected, "{input}");
    }
}

#[test]
fn pre_keeps_its_lines_and_attributes_may_hold_angle_brackets() {
    let page =
        readable("<p title=\"a > b\">intro</p><pre>  fn main() {\n      x();\n  }</pre><p>end</p>");
    assert_eq!(page.text, "intro\n\n  fn main() {\n      x();\n  }\n\nend");
}

#[test]
fn tables_and_stray_brackets_read_sensibly() {
    let page = readable(
        "<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>\
         <p>1 < 2 and 3 <> 4</p><p>unclosed <!-- comment",
    );
    assert_eq!(page.title, None);
    assert_eq!(page.text, "a b\n1 2\n\n1 < 2 and 3 <> 4\n\nunclosed");
}

#[test]
fn inline_snippets_lose_their_markup() {
    assert_eq!(
        inline_text("Brave says <strong>rust</strong>&nbsp;is   <em>fast</em> &amp; safe"),
        "Brave says rust is fast & safe"
    );
}

/// A page of many newlines then many paragraphs (a hostile page can be both, within
/// max_bytes) reads as its text: each paragraph looks at the end of the text, not at every
/// newline before it.
#[test]
fn many_newlines_then_many_paragraphs_read_as_the_text() {
    let page = format!(
        "<pre>x{}</pre>{}y",
        "\n".repeat(200_000),
        "<p>".repeat(100_000)
    );
    assert_eq!(readable(&page).text, "x\n\ny");
    let page = format!("x{}{}y", "<br>".repeat(100_000), "<div>".repeat(100_000));
    assert_eq!(readable(&page).text, "x\n\ny");
}
