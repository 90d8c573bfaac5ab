//! Markdown → sections at ATX headings. A line scan: linear in the input,
//! with at most six headings on the path whatever the document holds.

use crate::Section;

/// Splits Markdown into sections at ATX headings (`#` … `######`), keeping the
/// path of enclosing headings. Headings inside fenced code blocks are text.
pub fn markdown_sections(markdown: &str) -> Vec<Section> {
    let mut sections = Vec::new();
    let mut path: Vec<(usize, String)> = Vec::new();
    let mut current = String::new();
    let mut in_fence = false;
    let flush = |path: &[(usize, String)], text: &mut String, sections: &mut Vec<Section>| {
        let body = text.trim();
        if !body.is_empty() {
            let heading = (!path.is_empty())
                .then(|| path.iter().map(|(_, title)| title.as_str()).collect::<Vec<_>>().join(" › "));
            sections.push(Section { heading, text: body.to_owned() });
        }
        text.clear();
    };
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
        }
        let level = trimmed.chars().take_while(|&c| c == '#').count();
        let is_heading = !in_fence
            && (1..=6).contains(&level)
            && trimmed[level..].starts_with(' ')
            && !trimmed[level..].trim().is_empty();
        if is_heading {
            flush(&path, &mut current, &mut sections);
            let title = trimmed[level..].trim().trim_end_matches('#').trim().to_owned();
            path.retain(|(outer, _)| *outer < level);
            path.push((level, title));
        } else {
            current.push_str(line);
            current.push('\n');
        }
    }
    flush(&path, &mut current, &mut sections);
    sections
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_sections_keep_their_heading_path() {
        let doc = "Intro line.\n\n# Guide\n\nGuide text.\n\n## Install\n\nRun it.\n\n```sh\n# not a heading\n```\n\n## Configure\n\nSet it.\n\n# Reference\n\nAll of it.\n";
        let sections = markdown_sections(doc);
        let headings: Vec<Option<&str>> = sections.iter().map(|s| s.heading.as_deref()).collect();
        assert_eq!(
            headings,
            [None, Some("Guide"), Some("Guide › Install"), Some("Guide › Configure"), Some("Reference")]
        );
        assert!(sections[2].text.contains("# not a heading"));
    }
}
