//! HTML: a bounded parse, then an iterative walk of the main content.
//!
//! html5ever's tree builder checks its stack of open elements for every tag,
//! so its time grows with the square of the nesting: a million nested `<div>`
//! keep a core busy for minutes. The parse is therefore fed in pieces to a
//! tree sink that counts depth and elements as the tree is built, and it
//! stops at the first piece that passes a limit. The walk that follows keeps
//! its own stack, so no depth of the page can overflow the thread's.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use ego_tree::NodeId;
use html5ever::tendril::{ByteTendril, StrTendril, TendrilSink};
use html5ever::tree_builder::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::{Attribute, QualName};
use scraper::{ElementRef, Html, HtmlTreeSink, Node, Selector};

use crate::{collapse, Deadline, ExtractError, Extracted, Limits, Section};

/// Bytes fed to the parser between two checks of the limits: small enough
/// that one piece cannot take the parser far past a limit. Past the depth
/// limit each tag costs a walk of the open elements, so the rest of the
/// piece costs its square: 16 KiB of `<div>` took 60 ms to refuse, 4 KiB 5.
const PIECE: usize = 4 * 1024;

/// Parses `html` within `limits`: the document, or which limit it passed.
pub(crate) fn parse(html: &[u8], limits: &Limits, deadline: Deadline) -> Result<Html, ExtractError> {
    let guard = Rc::new(Guard::default());
    let sink = Bounded {
        inner: HtmlTreeSink::new(Html::new_document()),
        depths: RefCell::new(HashMap::new()),
        guard: Rc::clone(&guard),
        limits: *limits,
    };
    let mut parser = html5ever::parse_document(sink, Default::default()).from_utf8();
    for piece in html.chunks(PIECE) {
        parser.process(ByteTendril::from_slice(piece));
        if let Some(passed) = guard.passed.take() {
            return Err(ExtractError::OverLimit(passed));
        }
        deadline.check()?;
    }
    let document = parser.finish();
    match guard.passed.take() {
        Some(passed) => Err(ExtractError::OverLimit(passed)),
        None => Ok(document),
    }
}

/// What the sink tells the feeding loop.
#[derive(Default)]
struct Guard {
    /// The first limit passed, in words.
    passed: Cell<Option<String>>,
    elements: Cell<usize>,
}

impl Guard {
    fn pass(&self, why: String) {
        let earlier = self.passed.take();
        self.passed.set(Some(earlier.unwrap_or(why)));
    }
}

/// scraper's tree sink, with the depth of every node it has placed and the
/// count of elements made. A node past the depth limit is not placed (it
/// stays an orphan, outside the document) and the parse is stopped.
struct Bounded {
    inner: HtmlTreeSink,
    depths: RefCell<HashMap<NodeId, usize>>,
    guard: Rc<Guard>,
    limits: Limits,
}

impl Bounded {
    fn depth(&self, node: &NodeId) -> usize {
        self.depths.borrow().get(node).copied().unwrap_or(0)
    }

    /// Records that `child` goes at `depth`; false when that is too deep.
    fn place(&self, child: &NodeOrText<NodeId>, depth: usize) -> bool {
        if let NodeOrText::AppendNode(id) = child {
            if depth > self.limits.max_depth {
                self.guard.pass(format!("its elements nest more than {} deep", self.limits.max_depth));
                return false;
            }
            self.depths.borrow_mut().insert(*id, depth);
        }
        true
    }
}

impl TreeSink for Bounded {
    type Handle = NodeId;
    type Output = Html;
    type ElemName<'a>
        = std::cell::Ref<'a, QualName>
    where
        Self: 'a;

    fn finish(self) -> Html {
        self.inner.finish()
    }

    fn parse_error(&self, msg: std::borrow::Cow<'static, str>) {
        self.inner.parse_error(msg)
    }

    fn get_document(&self) -> NodeId {
        self.inner.get_document()
    }

    fn elem_name<'a>(&'a self, target: &'a NodeId) -> Self::ElemName<'a> {
        self.inner.elem_name(target)
    }

    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> NodeId {
        let made = self.guard.elements.get() + 1;
        self.guard.elements.set(made);
        if made == self.limits.max_elements + 1 {
            self.guard.pass(format!("it has more than {} elements", self.limits.max_elements));
        }
        self.inner.create_element(name, attrs, flags)
    }

    fn create_comment(&self, text: StrTendril) -> NodeId {
        self.inner.create_comment(text)
    }

    fn create_pi(&self, target: StrTendril, data: StrTendril) -> NodeId {
        self.inner.create_pi(target, data)
    }

    fn append(&self, parent: &NodeId, child: NodeOrText<NodeId>) {
        if self.place(&child, self.depth(parent) + 1) {
            self.inner.append(parent, child)
        }
    }

    fn append_based_on_parent_node(
        &self,
        element: &NodeId,
        prev_element: &NodeId,
        child: NodeOrText<NodeId>,
    ) {
        // Goes beside `element` if it has a parent, else into `prev_element`.
        let depth = self.depth(element).max(self.depth(prev_element) + 1);
        if self.place(&child, depth) {
            self.inner.append_based_on_parent_node(element, prev_element, child)
        }
    }

    fn append_doctype_to_document(&self, name: StrTendril, public_id: StrTendril, system_id: StrTendril) {
        self.inner.append_doctype_to_document(name, public_id, system_id)
    }

    fn get_template_contents(&self, target: &NodeId) -> NodeId {
        self.inner.get_template_contents(target)
    }

    fn same_node(&self, x: &NodeId, y: &NodeId) -> bool {
        self.inner.same_node(x, y)
    }

    fn set_quirks_mode(&self, mode: QuirksMode) {
        self.inner.set_quirks_mode(mode)
    }

    fn append_before_sibling(&self, sibling: &NodeId, new_node: NodeOrText<NodeId>) {
        if self.place(&new_node, self.depth(sibling)) {
            self.inner.append_before_sibling(sibling, new_node)
        }
    }

    fn add_attrs_if_missing(&self, target: &NodeId, attrs: Vec<Attribute>) {
        self.inner.add_attrs_if_missing(target, attrs)
    }

    fn remove_from_parent(&self, target: &NodeId) {
        self.inner.remove_from_parent(target)
    }

    fn reparent_children(&self, node: &NodeId, new_parent: &NodeId) {
        // The adoption agency moves misnested formatting elements' children;
        // the recorded depths of the moved subtree stay as they were, which
        // errs by a level or two on pages that already parse.
        self.inner.reparent_children(node, new_parent)
    }
}

/// Elements whose whole subtree is boilerplate, never content.
const DROPPED: [&str; 12] = [
    "nav", "header", "footer", "aside", "script", "style", "noscript", "form", "template", "svg", "iframe",
    "button",
];

/// Elements that end a line of text.
const BLOCKS: [&str; 22] = [
    "p",
    "div",
    "section",
    "article",
    "main",
    "li",
    "ul",
    "ol",
    "pre",
    "blockquote",
    "table",
    "tr",
    "td",
    "th",
    "dl",
    "dt",
    "dd",
    "br",
    "hr",
    "figure",
    "figcaption",
    "details",
];

fn selector(css: &str) -> Option<Selector> {
    Selector::parse(css).ok()
}

pub(crate) fn extract(html: &str, limits: &Limits, deadline: Deadline) -> Result<Extracted, ExtractError> {
    let document = parse(html.as_bytes(), limits, deadline)?;
    let first_text = |css: &str| -> Option<String> {
        let found = document.select(&selector(css)?).next()?;
        Some(collapse(&found.text().collect::<String>())).filter(|t| !t.is_empty())
    };
    let title = first_text("title").or_else(|| first_text("h1"));
    let canonical_url = selector("link[rel~=canonical]")
        .and_then(|s| document.select(&s).next())
        .and_then(|link| link.value().attr("href"))
        .map(str::to_owned);

    let root = ["main", "article", "[role=main]", "body"]
        .iter()
        .filter_map(|css| selector(css))
        .find_map(|s| document.select(&s).next());
    let mut walker = Walker::default();
    if let Some(root) = root {
        walker.walk(root, deadline)?;
    }
    walker.flush();
    Ok(Extracted { title, canonical_url, sections: walker.sections })
}

/// The `href`s of a page's links that do not ask not to be followed, as
/// written (the caller resolves them against the page's URL). A page past a
/// limit has no links to follow.
pub fn links(html: &[u8], limits: &Limits) -> Vec<String> {
    let Ok(page) = parse(html, limits, Deadline::start(limits.time_budget)) else { return Vec::new() };
    let Some(anchors) = selector("a[href]") else { return Vec::new() };
    page.select(&anchors)
        .filter(|a| !a.value().attr("rel").unwrap_or_default().split_whitespace().any(|r| r == "nofollow"))
        .filter_map(|a| a.value().attr("href"))
        .map(|href| href.trim().to_owned())
        .collect()
}

/// One step of the walk: enter an element, read a text, or leave an element.
enum Step<'a> {
    Enter(ElementRef<'a>),
    Text { text: &'a str, preformatted: bool },
    Leave { block: bool },
}

#[derive(Default)]
struct Walker {
    path: Vec<(usize, String)>,
    lines: Vec<String>,
    line: String,
    sections: Vec<Section>,
}

impl Walker {
    /// Visits `root`'s subtree in document order with an explicit stack.
    fn walk(&mut self, root: ElementRef<'_>, deadline: Deadline) -> Result<(), ExtractError> {
        let mut stack = vec![Step::Enter(root)];
        let mut steps = 0usize;
        while let Some(step) = stack.pop() {
            steps += 1;
            if steps.is_multiple_of(4096) {
                deadline.check()?;
            }
            match step {
                Step::Enter(element) => self.enter(element, &mut stack),
                Step::Text { text, preformatted } => self.text(text, preformatted),
                Step::Leave { block } => {
                    if block {
                        self.end_line();
                    }
                }
            }
        }
        Ok(())
    }

    /// Handles an element; its children (and its end) go on the stack.
    fn enter<'a>(&mut self, element: ElementRef<'a>, stack: &mut Vec<Step<'a>>) {
        let name = element.value().name();
        let role = element.value().attr("role").unwrap_or_default();
        if DROPPED.contains(&name) || matches!(role, "navigation" | "banner" | "contentinfo") {
            return;
        }
        if let Some(level) = heading_level(name) {
            self.flush();
            let title = collapse(&element.text().collect::<String>());
            if !title.is_empty() {
                self.path.retain(|(outer, _)| *outer < level);
                self.path.push((level, title));
            }
            return;
        }
        let preformatted = name == "pre";
        stack.push(Step::Leave { block: BLOCKS.contains(&name) });
        // Reversed, so the first child is the next popped.
        let children: Vec<_> = element.children().collect();
        for child in children.into_iter().rev() {
            match child.value() {
                Node::Text(text) => stack.push(Step::Text { text, preformatted }),
                Node::Element(_) => {
                    if let Some(child) = ElementRef::wrap(child) {
                        stack.push(Step::Enter(child));
                    }
                }
                _ => {}
            }
        }
    }

    fn text(&mut self, text: &str, preformatted: bool) {
        if preformatted {
            self.line.push_str(text);
            return;
        }
        let piece = collapse(text);
        if !piece.is_empty() {
            if !self.line.is_empty() && !self.line.ends_with(' ') && text.starts_with(char::is_whitespace) {
                self.line.push(' ');
            }
            self.line.push_str(&piece);
            if text.ends_with(char::is_whitespace) {
                self.line.push(' ');
            }
        }
    }

    fn end_line(&mut self) {
        let line = self.line.trim_end().to_owned();
        if !line.trim().is_empty() {
            self.lines.push(line);
        }
        self.line.clear();
    }

    fn flush(&mut self) {
        self.end_line();
        if !self.lines.is_empty() {
            let heading = (!self.path.is_empty())
                .then(|| self.path.iter().map(|(_, t)| t.as_str()).collect::<Vec<_>>().join(" › "));
            self.sections.push(Section { heading, text: self.lines.join("\n") });
            self.lines.clear();
        }
    }
}

fn heading_level(name: &str) -> Option<usize> {
    match name {
        "h1" => Some(1),
        "h2" => Some(2),
        "h3" => Some(3),
        "h4" => Some(4),
        "h5" => Some(5),
        "h6" => Some(6),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use crate::{extract, extract_within, Format};

    use super::*;

    const PAGE: &str = r#"<!doctype html>
<html><head><title>Install Lore · Docs</title>
<link rel="canonical" href="https://docs.example.test/install">
<style>.x { color: red }</style><script>var tracking = 1;</script></head>
<body>
<header><a href="/">Example Docs</a><nav><a href="/a">All pages</a> <a href="/b">Blog</a></nav></header>
<aside class="sidebar"><ul><li>Sidebar link</li></ul></aside>
<main>
  <h1>Install Lore</h1>
  <p>Lore runs on <strong>Linux</strong> and <em>macOS</em>.</p>
  <h2>Requirements</h2>
  <ul><li>2 cores</li><li>4 GB of memory</li></ul>
  <h2>Steps</h2>
  <pre>scripts/run
lore serve</pre>
  <div role="navigation">Previous | Next</div>
  <form><button>Was this page helpful?</button></form>
</main>
<footer>© Example Inc. Privacy · Terms</footer>
</body></html>"#;

    #[test]
    fn html_keeps_main_content_title_and_headings() {
        let extracted = extract(Format::Html, PAGE.as_bytes(), "install.html").unwrap();
        assert_eq!(extracted.title.as_deref(), Some("Install Lore · Docs"));
        assert_eq!(extracted.canonical_url.as_deref(), Some("https://docs.example.test/install"));
        let sections: Vec<(Option<&str>, &str)> =
            extracted.sections.iter().map(|s| (s.heading.as_deref(), s.text.as_str())).collect();
        assert_eq!(
            sections,
            [
                (Some("Install Lore"), "Lore runs on Linux and macOS."),
                (Some("Install Lore › Requirements"), "2 cores\n4 GB of memory"),
                (Some("Install Lore › Steps"), "scripts/run\nlore serve"),
            ]
        );
        let all: String = extracted.sections.iter().map(|s| s.text.clone()).collect();
        for boilerplate in ["All pages", "Sidebar", "Previous", "helpful", "Privacy", "tracking", "color"] {
            assert!(!all.contains(boilerplate), "{boilerplate} leaked into {all:?}");
        }
    }

    #[test]
    fn a_page_without_main_uses_the_body_minus_boilerplate() {
        let html =
            "<html><body><nav>Menu</nav><h1>Title</h1><p>Body text.</p><footer>Foot</footer></body></html>";
        let extracted = extract(Format::Html, html.as_bytes(), "page").unwrap();
        assert_eq!(extracted.title.as_deref(), Some("Title"));
        assert_eq!(
            extracted.sections,
            vec![Section { heading: Some("Title".into()), text: "Body text.".into() }]
        );
    }

    fn nested(levels: usize) -> String {
        format!("{}word{}", "<div>".repeat(levels), "</div>".repeat(levels))
    }

    #[test]
    fn nesting_within_the_limit_is_read_without_recursion() {
        // 500 levels inside <html><body>: within 512. The walk used to
        // recurse once per level; 10,000 overflowed a worker's stack.
        let extracted = extract(Format::Html, nested(500).as_bytes(), "deep").unwrap();
        assert_eq!(extracted.sections[0].text, "word");
    }

    #[test]
    fn nesting_past_the_limit_is_refused_quickly_at_any_depth() {
        for levels in [10_000, 1_000_000] {
            let started = Instant::now();
            let refused = extract(Format::Html, nested(levels).as_bytes(), "deep");
            assert!(
                matches!(&refused, Err(ExtractError::OverLimit(why)) if why.contains("nest more than 512 deep")),
                "{levels} levels: {refused:?}"
            );
            // The unbounded parse of a million levels took minutes.
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "{levels} levels took {:?}",
                started.elapsed()
            );
        }
    }

    #[test]
    fn too_many_elements_are_refused() {
        let limits = Limits { max_elements: 1_000, ..Limits::default() };
        let page = "<p>x</p>".repeat(2_000);
        assert!(matches!(
            extract_within(Format::Html, page.as_bytes(), "many", &limits),
            Err(ExtractError::OverLimit(why)) if why.contains("more than 1000 elements")
        ));
        assert!(extract_within(Format::Html, "<p>x</p>".repeat(500).as_bytes(), "few", &limits).is_ok());
    }

    #[test]
    fn links_skip_nofollow_and_stop_at_the_limits() {
        let page = br#"<a href=" /a ">A</a><a rel="nofollow" href="/b">B</a><a href="/c">C</a>"#;
        assert_eq!(links(page, &Limits::default()), ["/a", "/c"]);
        assert!(links(nested(100_000).as_bytes(), &Limits::default()).is_empty());
    }
}
