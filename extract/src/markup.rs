//! The text formats documentation is written in, beside Markdown: MDX,
//! reStructuredText and AsciiDoc, each turned into sections at its own
//! headings; YAML front matter's title; and the anchor a heading gets on a
//! forge's rendered page. Line scans like the Markdown splitter: linear in
//! the input, a heading path no deeper than six levels.

use crate::markdown::markdown_sections;
use crate::Section;

/// The deepest heading path kept; deeper headings nest under the sixth.
const MAX_LEVELS: usize = 6;

/// YAML front matter (`---` on the first line, up to the next `---` or
/// `...`): its `title:` if it has one, and the text after it. Text without
/// front matter comes back whole.
pub fn front_matter(text: &str) -> (Option<String>, &str) {
    let Some(rest) = text.strip_prefix("---\n").or_else(|| text.strip_prefix("---\r\n")) else {
        return (None, text);
    };
    let mut title = None;
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        at += line.len();
        let bare = line.trim_end();
        if bare == "---" || bare == "..." {
            return (title, &rest[at..]);
        }
        if let Some(value) = bare.strip_prefix("title:") {
            let value = value.trim().trim_matches(|c| c == '"' || c == '\'').trim();
            if !value.is_empty() {
                title = Some(value.to_owned());
            }
        }
    }
    // No closing line: not front matter after all.
    (None, text)
}

/// MDX → Markdown: `import` and `export` lines and JSX tags (`<Note>`,
/// `</Tabs>`, `<Card title="…" />`, across lines too) are dropped, the text
/// between tags kept; so are `{/* comments */}`. Fenced code is left as is.
pub fn mdx_to_markdown(mdx: &str) -> String {
    let mut out = String::with_capacity(mdx.len());
    let mut in_fence = false;
    // Inside a tag that spans lines: the depth of `{` within it.
    let mut open_tag: Option<usize> = None;
    for line in mdx.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if open_tag.is_none() && (trimmed.starts_with("```") || trimmed.starts_with("~~~")) {
            in_fence = !in_fence;
            out.push_str(line);
            continue;
        }
        if in_fence {
            out.push_str(line);
            continue;
        }
        if open_tag.is_none() && (trimmed.starts_with("import ") || trimmed.starts_with("export ")) {
            continue;
        }
        let kept = strip_jsx(line, &mut open_tag);
        if kept.trim().is_empty() && !line.trim().is_empty() {
            // A line of tags alone leaves no blank line behind.
            continue;
        }
        out.push_str(&kept);
    }
    out
}

/// Removes the JSX tags and `{/* … */}` comments of one line; `open_tag`
/// carries a tag that continues on the next line.
fn strip_jsx(line: &str, open_tag: &mut Option<usize>) -> String {
    let mut kept = String::with_capacity(line.len());
    let mut chars = line.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if let Some(depth) = open_tag.as_mut() {
            match c {
                '{' => *depth += 1,
                '}' => *depth = depth.saturating_sub(1),
                '>' if *depth == 0 => *open_tag = None,
                _ => {}
            }
            continue;
        }
        let rest = &line[at..];
        if c == '<' && starts_jsx_tag(&rest[1..]) {
            *open_tag = Some(0);
            continue;
        }
        if rest.starts_with("{/*") {
            match rest.find("*/}") {
                Some(end) => {
                    // Skip to just past the comment's closing `*/}`.
                    let stop = at + end + 3;
                    while chars.peek().is_some_and(|(next, _)| *next < stop) {
                        chars.next();
                    }
                    continue;
                }
                None => {
                    kept.push_str(rest);
                    break;
                }
            }
        }
        kept.push(c);
    }
    kept
}

/// Whether the text after a `<` opens or closes a JSX element: a capitalised
/// component (`Note`, `/Note`, `Tabs.Item`) or a fragment (`>`, `/>`).
/// Lower-case HTML is left to Markdown.
fn starts_jsx_tag(after: &str) -> bool {
    let name = after.strip_prefix('/').unwrap_or(after);
    name.starts_with('>') || name.chars().next().is_some_and(|c| c.is_ascii_uppercase())
}

/// reStructuredText → sections at its section titles (a title line
/// underlined, or over- and underlined, with one punctuation character),
/// levels in the order the document first uses each style, as reST
/// decides them. Comments, targets, substitutions and directives that carry
/// no text (`toctree`, `image`, `include`, `raw`, `meta`, `index`, …) are
/// dropped with their indented blocks; other directives keep their
/// content, without their options. Roles keep their text (`` :ref:`Install
/// <install>` `` → `Install`). The first title is the document's title.
pub fn rst_sections(rst: &str) -> (Option<String>, Vec<Section>) {
    let lines: Vec<&str> = rst.lines().collect();
    let mut styles: Vec<(char, bool)> = Vec::new();
    let mut doc = Outline::default();
    // Inside an explicit markup block: whether its content is dropped.
    let mut block: Option<bool> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(dropped) = block {
            if line.trim().is_empty() || line.starts_with([' ', '\t']) {
                let content = line.trim();
                let option = content.starts_with(':') && content[1..].contains(": ")
                    || content.starts_with(':') && content.ends_with(':');
                if !dropped && !option {
                    doc.push_text(&rst_inline(content));
                } else if content.is_empty() {
                    doc.push_text("");
                }
                i += 1;
                continue;
            }
            block = None;
        }
        if let Some(rest) = line.strip_prefix(".. ") {
            block = Some(drops_content(rest));
            if let Some((_, argument)) = rest.split_once("::") {
                let argument = argument.trim();
                if block == Some(false) && !argument.is_empty() {
                    doc.push_text(&rst_inline(argument));
                }
            }
            i += 1;
            continue;
        }
        // A title: text over an adornment at least as long, optionally
        // under an equal overline.
        let next = lines.get(i + 1).copied().unwrap_or_default();
        let overlined = is_adornment(line)
            && lines.get(i + 2).is_some_and(|under| is_adornment(under) && under.trim() == line.trim())
            && !next.trim().is_empty();
        let (title, style, used) = if overlined {
            (next.trim(), (line.trim().chars().next().unwrap_or('='), true), 3)
        } else if !line.trim().is_empty()
            && !line.starts_with([' ', '\t'])
            && is_adornment(next)
            && next.trim().chars().count() >= line.trim().chars().count()
        {
            (line.trim(), (next.trim().chars().next().unwrap_or('='), false), 2)
        } else {
            ("", ('=', false), 0)
        };
        if used > 0 {
            let level = match styles.iter().position(|s| *s == style) {
                Some(known) => known,
                None => {
                    styles.push(style);
                    styles.len() - 1
                }
            };
            doc.heading(level, &rst_inline(title));
            i += used;
            continue;
        }
        if is_adornment(line) && line.trim().chars().count() >= 4 {
            // A transition (a line of punctuation alone) is no text.
            i += 1;
            continue;
        }
        doc.push_text(&rst_inline(line));
        i += 1;
    }
    doc.finish()
}

/// Whether an explicit markup block (what follows `.. `) carries no text.
fn drops_content(markup: &str) -> bool {
    let Some((name, _)) = markup.split_once("::") else {
        // A footnote (`.. [1] …`) is text; a target (`.. _name:`) and a
        // comment are not.
        return !markup.starts_with('[');
    };
    let name = name.trim();
    if name.starts_with('|') {
        return true; // a substitution definition
    }
    matches!(
        name,
        "toctree"
            | "image"
            | "include"
            | "literalinclude"
            | "raw"
            | "meta"
            | "index"
            | "highlight"
            | "contents"
            | "sectnum"
            | "only"
            | "autosummary"
            | "currentmodule"
            | "module"
            | "default-role"
            | "role"
            | "figure"
            | "graphviz"
    )
}

/// A line of one punctuation character repeated (at least twice).
fn is_adornment(line: &str) -> bool {
    let line = line.trim_end();
    let mut chars = line.chars();
    let Some(first) = chars.next() else { return false };
    line.chars().count() >= 2 && first.is_ascii_punctuation() && chars.all(|c| c == first)
}

/// reST inline markup → its text: roles keep their text (the part before a
/// `<target>`), literals and emphasis lose their marks, links keep their
/// words.
fn rst_inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('`') {
        let (before, from) = rest.split_at(start);
        // A role before the backtick: `:name:` just before it.
        let before = match before.strip_suffix(':').and_then(|b| b.rfind(':').map(|at| (b, at))) {
            Some((b, at)) if b[at + 1..].chars().all(|c| c.is_ascii_alphanumeric() || "-_:.".contains(c)) => {
                &b[..at]
            }
            _ => before,
        };
        out.push_str(before);
        let ticks = if from.starts_with("``") { 2 } else { 1 };
        let inner_from = &from[ticks..];
        let Some(end) = inner_from.find(&"``"[..ticks]) else {
            out.push_str(from);
            rest = "";
            break;
        };
        let inner = &inner_from[..end];
        let inner = match inner.rfind(" <") {
            Some(at) if inner.ends_with('>') => &inner[..at],
            _ => inner,
        };
        out.push_str(inner);
        rest = &inner_from[end + ticks..];
        // A link's trailing underscores.
        rest = rest.trim_start_matches('_');
    }
    out.push_str(rest);
    out.replace("**", "")
}

/// AsciiDoc → sections at its section titles (`== Title` … `====== Title`;
/// the `= Title` line is the document's title). Attribute entries,
/// comments, block attributes and anchors, block delimiters and block
/// macros that carry no text (`image::`, `include::`, `toc::`) are dropped;
/// the text of blocks is kept, and headings inside listing and literal
/// blocks are text.
pub fn asciidoc_sections(adoc: &str) -> (Option<String>, Vec<Section>) {
    let mut doc = Outline::default();
    let mut title = None;
    let mut in_comment = false;
    // The delimiter of the listing or literal block being read.
    let mut verbatim: Option<&str> = None;
    for line in adoc.lines() {
        let bare = line.trim_end();
        if bare == "////" {
            in_comment = !in_comment;
            continue;
        }
        if in_comment {
            continue;
        }
        if let Some(delimiter) = verbatim {
            if bare == delimiter {
                verbatim = None;
            } else {
                doc.push_text(line);
            }
            continue;
        }
        if matches!(bare, "----" | "....") || bare.starts_with("```") {
            verbatim = Some(if bare.starts_with("```") { "```" } else { bare });
            continue;
        }
        if is_adoc_delimiter(bare) || bare.starts_with("//") {
            continue;
        }
        let level = bare.chars().take_while(|&c| c == '=').count();
        if (1..=6).contains(&level) && bare[level..].starts_with(' ') && !bare[level..].trim().is_empty() {
            let heading = bare[level..].trim();
            if level == 1 {
                title.get_or_insert_with(|| heading.to_owned());
            } else {
                doc.heading(level - 2, heading);
            }
            continue;
        }
        let is_attribute_entry =
            bare.starts_with(':') && bare[1..].find(':').is_some_and(|at| !bare[1..=at].contains(' '));
        let is_block_attribute = bare.starts_with('[') && bare.ends_with(']');
        let is_block_macro = bare.split_once("::").is_some_and(|(name, target)| {
            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !name.is_empty()
                && target.ends_with(']')
        });
        if is_attribute_entry || is_block_attribute || is_block_macro {
            continue;
        }
        // `NOTE: text` reads as "Note: text".
        let text = ["NOTE", "TIP", "IMPORTANT", "WARNING", "CAUTION"]
            .iter()
            .find_map(|label| {
                bare.strip_prefix(label)
                    .and_then(|rest| rest.strip_prefix(": "))
                    .map(|rest| format!("{}{}: {rest}", &label[..1], label[1..].to_lowercase()))
            })
            .unwrap_or_else(|| bare.to_owned());
        doc.push_text(&text);
    }
    let (first, sections) = doc.finish();
    (title.or(first), sections)
}

/// An AsciiDoc block delimiter other than the verbatim ones: example,
/// sidebar, quote, open, pass blocks and tables.
fn is_adoc_delimiter(line: &str) -> bool {
    matches!(line, "====" | "****" | "____" | "--" | "++++" | "|===" | ",===" | ":===")
}

/// Sections being gathered under a heading path.
#[derive(Default)]
struct Outline {
    path: Vec<(usize, String)>,
    text: String,
    sections: Vec<Section>,
    first_heading: Option<String>,
}

impl Outline {
    fn heading(&mut self, level: usize, title: &str) {
        self.flush();
        let level = level.min(MAX_LEVELS - 1);
        self.first_heading.get_or_insert_with(|| title.to_owned());
        self.path.retain(|(outer, _)| *outer < level);
        self.path.push((level, title.to_owned()));
    }

    fn push_text(&mut self, line: &str) {
        self.text.push_str(line);
        self.text.push('\n');
    }

    fn flush(&mut self) {
        let body = self.text.trim();
        if !body.is_empty() {
            let heading = (!self.path.is_empty())
                .then(|| self.path.iter().map(|(_, title)| title.as_str()).collect::<Vec<_>>().join(" › "));
            self.sections.push(Section { heading, text: body.to_owned() });
        }
        self.text.clear();
    }

    /// The title (the first heading) and the sections.
    fn finish(mut self) -> (Option<String>, Vec<Section>) {
        self.flush();
        (self.first_heading, self.sections)
    }
}

/// Markdown with front matter: the front matter's title, else the first
/// `# ` heading; sections at the headings.
pub fn markdown_document(text: &str) -> (Option<String>, Vec<Section>) {
    let (front_title, body) = front_matter(text);
    let title = front_title
        .or_else(|| body.lines().find_map(|line| line.strip_prefix("# ")).map(|t| t.trim().to_owned()));
    (title, markdown_sections(body))
}

/// The anchor a forge gives a heading on its rendered page (GitHub's
/// rule, which GitLab and Gitea follow for Markdown): lower case, letters,
/// digits, `-` and `_` kept, spaces become `-`, everything else dropped.
pub fn heading_anchor(heading: &str) -> String {
    heading
        .trim()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .flat_map(char::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headings(sections: &[Section]) -> Vec<&str> {
        sections.iter().map(|s| s.heading.as_deref().unwrap_or("")).collect()
    }

    #[test]
    fn front_matter_gives_the_title_and_is_not_text() {
        let (title, body) =
            front_matter("---\ntitle: \"Install guide\"\nsidebar: 2\n---\n# Setup\n\nRun it.\n");
        assert_eq!(title.as_deref(), Some("Install guide"));
        assert_eq!(body, "# Setup\n\nRun it.\n");
        let (title, body) = markdown_document("---\ntitle: Install guide\n---\n# Setup\n\nRun it.\n");
        assert_eq!(title.as_deref(), Some("Install guide"));
        assert_eq!(body[0].heading.as_deref(), Some("Setup"));
        // An opening line with no close is text.
        assert_eq!(front_matter("---\nnot closed"), (None, "---\nnot closed"));
    }

    #[test]
    fn mdx_loses_imports_exports_and_tags_and_keeps_their_text() {
        let mdx = "import Tabs from '@theme/Tabs';\nexport const meta = {};\n\n# Deploy\n\n<Note>\nKeep the key secret.\n</Note>\n\n<Card title=\"Ports\"\n  href={{ a: '>' }}\n/>\nThe port is <Code>8080</Code> by default. {/* hidden */}\n\n```jsx\n<Tabs>kept in code</Tabs>\n```\n<div>html stays</div>\n";
        let md = mdx_to_markdown(mdx);
        assert!(!md.contains("import") && !md.contains("export"), "{md}");
        assert!(md.contains("Keep the key secret."), "{md}");
        assert!(md.contains("The port is 8080 by default. \n"), "{md}");
        assert!(!md.contains("Card") && !md.contains("hidden") && !md.contains("href"), "{md}");
        assert!(md.contains("<Tabs>kept in code</Tabs>"), "{md}");
        assert!(md.contains("<div>html stays</div>"), "{md}");
        assert_eq!(markdown_sections(&md)[0].heading.as_deref(), Some("Deploy"));
    }

    #[test]
    fn rst_titles_nest_by_their_styles_and_directives_without_text_are_dropped() {
        let rst = "=====\nGuide\n=====\n\nIntro with :ref:`the installer <install>` and ``code``.\n\n.. toctree::\n   :maxdepth: 2\n\n   install\n   usage\n\nInstall\n-------\n\n.. note::\n   :class: wide\n\n   Back up first.\n\n.. image:: shot.png\n   :alt: A screenshot\n\n.. _install:\n\nRun **make**.\n\nPorts\n~~~~~\n\nThe port is 8080.\n\nUsage\n-----\n\n.. a comment that says nothing\n\nAsk it.\n";
        let (title, sections) = rst_sections(rst);
        assert_eq!(title.as_deref(), Some("Guide"));
        assert_eq!(
            headings(&sections),
            ["Guide", "Guide › Install", "Guide › Install › Ports", "Guide › Usage"]
        );
        assert_eq!(sections[0].text, "Intro with the installer and code.");
        assert!(sections[1].text.contains("Back up first."), "{}", sections[1].text);
        assert!(sections[1].text.contains("Run make."), "{}", sections[1].text);
        let all: String = sections.iter().map(|s| s.text.as_str()).collect();
        for gone in ["maxdepth", "usage\n", "shot.png", "screenshot", "class", "comment"] {
            assert!(!all.contains(gone), "{gone}: {all}");
        }
    }

    #[test]
    fn asciidoc_sections_skip_attributes_macros_and_delimiters() {
        let adoc = "= Operator Manual\n:toc: left\n:icons: font\n\nPreamble text.\n\n== Backups\n\n[NOTE]\n====\nBackups run nightly.\n====\n\nimage::diagram.png[Diagram]\ninclude::partials/more.adoc[]\n\n=== Restore\n\n[source,shell]\n----\n== not a heading\nrestore --all\n----\n\nWARNING: Restoring overwrites data.\n// a comment\n////\nhidden block\n////\n";
        let (title, sections) = asciidoc_sections(adoc);
        assert_eq!(title.as_deref(), Some("Operator Manual"));
        assert_eq!(headings(&sections), ["", "Backups", "Backups › Restore"]);
        assert_eq!(sections[0].text, "Preamble text.");
        assert_eq!(sections[1].text, "Backups run nightly.");
        assert!(sections[2].text.contains("== not a heading\nrestore --all"), "{}", sections[2].text);
        assert!(sections[2].text.contains("Warning: Restoring overwrites data."), "{}", sections[2].text);
        let all: String = sections.iter().map(|s| s.text.as_str()).collect();
        for gone in ["toc", "diagram", "partials", "comment", "hidden", "[source", "===="] {
            assert!(!all.contains(gone), "{gone}: {all}");
        }
    }

    #[test]
    fn anchors_follow_the_forges_rule() {
        assert_eq!(heading_anchor("Install & Configure"), "install--configure");
        assert_eq!(heading_anchor("The `lore` CLI (v2.0)"), "the-lore-cli-v20");
        assert_eq!(heading_anchor("Über_setup"), "über_setup");
    }
}
