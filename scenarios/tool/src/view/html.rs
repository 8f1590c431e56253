//! The page's HTML: a template with its style sheet and script inlined and the data embedded,
//! so the file opens from disk with no network.

const TEMPLATE: &str = include_str!("assets/page.html");
const STYLE: &str = include_str!("assets/page.css");
const SCRIPT: &str = include_str!("assets/timeline.js");

/// The page for `title` drawing `data` (the page's JSON).
pub(super) fn render(title: &str, data: &str) -> String {
    // `<` only occurs inside JSON strings, where `\u003c` means the same: no `</script>` or
    // `<!--` in the data can end the script element early.
    let data = data.replace('<', "\\u003c");
    TEMPLATE
        .replace("{{TITLE}}", &escape(title))
        .replace("/*{{STYLE}}*/", STYLE)
        .replace("/*{{SCRIPT}}*/", SCRIPT)
        .replace("{{DATA}}", &data)
}

/// Text as HTML.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(ch),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_cannot_close_its_script_element() {
        let page = render(
            "a <b> & c",
            r#"{"title":"</script><script>alert(1)</script>"}"#,
        );
        assert!(page.contains("<title>a &lt;b&gt; &amp; c</title>"));
        let data = page
            .split("id=\"avout-data\">")
            .nth(1)
            .and_then(|rest| rest.split("</script>").next())
            .unwrap();
        let parsed: serde_json::Value = serde_json::from_str(data).unwrap();
        assert_eq!(parsed["title"], "</script><script>alert(1)</script>");
    }

    #[test]
    fn the_page_needs_no_network() {
        let page = render("t", "{}");
        for remote in ["http://", "https://", "//cdn", "src=\"", "href=\""] {
            assert!(!page.contains(remote), "the page refers to {remote}");
        }
    }
}
