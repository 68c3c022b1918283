//! Generated web sites: templates (navigation, a header, a rail of other
//! headlines, comment boxes, a footer; some larger than the article)
//! around articles. Shared by `tests/web.rs` and `tools/web.rs`, which
//! supply the words (dictionary words in tests, corpus text in the tool).

use rand::prelude::*;
use rand_chacha::ChaCha8Rng;

/// Words of filler text: `n` words from the caller's vocabulary, joined
/// as the language joins them.
pub type Words<'a> = dyn Fn(&mut ChaCha8Rng, usize) -> String + 'a;

/// One site's template.
pub struct Site {
    name: String,
    style: usize,
    nav: Vec<String>,
    headlines: Vec<String>,
    footer: String,
    comments: Vec<String>,
    /// Headlines in a page's rail and comments under it.
    rail: usize,
    boxes: usize,
}

/// `&`, `<`, `>` and `"` as HTML references.
pub fn escape(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

impl Site {
    /// Site `i`: its layout (one of three), and its template's text. Every
    /// third site is large: a rail of 24 headlines, 6 comments and a long
    /// footer (more text than a short article).
    pub fn new(rng: &mut ChaCha8Rng, words: &Words<'_>, i: usize) -> Site {
        let large = i % 3 == 2;
        Site {
            name: format!("{} {i}", words(rng, 2)),
            style: i % 3,
            nav: (0..14).map(|_| words(rng, 2)).collect(),
            headlines: (0..80).map(|_| words(rng, 10)).collect(),
            footer: words(rng, if large { 160 } else { 50 }),
            comments: (0..60).map(|_| words(rng, 25)).collect(),
            rail: if large { 24 } else { 8 },
            boxes: if large { 6 } else { 2 },
        }
    }

    /// A page of this site holding `title` and `paragraphs`; the rail's
    /// headlines and the comments are drawn anew for each page.
    pub fn page(&self, rng: &mut ChaCha8Rng, title: &str, paragraphs: &[String]) -> String {
        let nav: String = self
            .nav
            .iter()
            .map(|n| format!("<li><a href=\"/{}\">{}</a></li>", escape(n), escape(n)))
            .collect();
        let rail: String = self
            .headlines
            .choose_multiple(rng, self.rail)
            .map(|h| format!("<li><a href=\"/n/{}\">{}</a></li>", h.len(), escape(h)))
            .collect();
        let comments: String = self
            .comments
            .choose_multiple(rng, self.boxes)
            .map(|c| {
                format!(
                    "<div class=\"comment\"><span class=\"user\">u{}</span><p>{}</p></div>",
                    c.len(),
                    escape(c)
                )
            })
            .collect();
        let body: String = paragraphs
            .iter()
            .map(|p| format!("<p>{}</p>\n", escape(p)))
            .collect();
        let (name, title, footer) = (escape(&self.name), escape(title), escape(&self.footer));
        let head = format!(
            "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{title} - {name}</title>\
             <style>.nav{{color:red}}</style><script>var site = \"{name}\";</script></head>"
        );
        match self.style {
            0 => format!(
                "{head}<body><header><h2>{name}</h2><nav><ul>{nav}</ul></nav></header>\
                 <main><article><h1>{title}</h1>\n{body}</article>\
                 <section class=\"comments\">{comments}</section></main>\
                 <aside class=\"sidebar\"><h3>{name}</h3><ul>{rail}</ul></aside>\
                 <footer><p>{footer}</p></footer></body></html>"
            ),
            1 => format!(
                "{head}<body><div id=\"top\" class=\"header\"><div class=\"nav menu\"><ul>{nav}</ul></div></div>\
                 <div id=\"wrap\"><div class=\"content\" id=\"content\"><h1 class=\"title\">{title}</h1>\
                 <div class=\"text\">\n{body}</div></div>\
                 <div class=\"related\"><ul>{rail}</ul></div>\
                 <div id=\"comments\" class=\"comment-list\">{comments}</div></div>\
                 <div class=\"footer\"><p>{footer}</p></div></body></html>"
            ),
            _ => format!(
                "{head}<body><table width=\"100%\"><tr><td colspan=\"2\" class=\"nav\"><ul>{nav}</ul></td></tr>\
                 <tr><td class=\"main\"><h1>{title}</h1><div id=\"article\">\n{body}</div>\
                 <div class=\"comments\">{comments}</div></td>\
                 <td class=\"side\"><ul>{rail}</ul></td></tr>\
                 <tr><td colspan=\"2\" class=\"copyright\"><p>{footer}</p></td></tr></table></body></html>"
            ),
        }
    }
}
