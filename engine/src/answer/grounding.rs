//! The grounding check: is every statement of an answer supported by the
//! passages it was given, and does every citation point to one of them?
//!
//! The check is lexical and explainable. An answer is split into sentences;
//! a sentence's *content words* (three letters or more, not a stop word,
//! lower-cased, plural `s` dropped, cut to six letters so that "calibrating"
//! meets "calibration") are looked up in a passage, and the share found is
//! that passage's support for the sentence. A sentence claims something
//! only when it says a word or a number the question did not: restating the
//! question claims nothing. A sentence that cites
//! passages (`[2]`) is judged against those; one that cites nothing against
//! all of them, and it is attributed to the passage that supports it best.
//! Every number a sentence states must appear in that passage too (small
//! models invent figures first). Pleasantries ("Sure!") are stop words and
//! claim nothing. The answer is grounded when it makes at least one claim, every
//! claim is supported to `min_support`, and no citation points outside the
//! passages.

use std::collections::{BTreeSet, HashMap, HashSet};

const STOP_WORDS: &[&str] = &[
    "the",
    "and",
    "for",
    "are",
    "but",
    "not",
    "you",
    "your",
    "with",
    "this",
    "that",
    "from",
    "they",
    "them",
    "their",
    "there",
    "then",
    "than",
    "have",
    "has",
    "had",
    "was",
    "were",
    "will",
    "would",
    "can",
    "could",
    "should",
    "may",
    "might",
    "must",
    "into",
    "onto",
    "out",
    "over",
    "under",
    "about",
    "also",
    "its",
    "it's",
    "our",
    "ours",
    "his",
    "her",
    "she",
    "him",
    "who",
    "whom",
    "which",
    "what",
    "when",
    "where",
    "why",
    "how",
    "all",
    "any",
    "each",
    "some",
    "such",
    "only",
    "own",
    "same",
    "too",
    "very",
    "just",
    "more",
    "most",
    "other",
    "these",
    "those",
    "been",
    "being",
    "does",
    "did",
    "doing",
    "because",
    "while",
    "after",
    "before",
    "again",
    "further",
    "once",
    "here",
    "both",
    "few",
    "nor",
    "off",
    "per",
    "via",
    "yes",
    "use",
    "used",
    "using",
    "one",
    "get",
    "got",
    "make",
    "made",
    "like",
    "well",
    "able",
    "according",
    "passage",
    "passages",
    "sure",
    "happy",
    "glad",
    "help",
    "hope",
    "thanks",
    "thank",
    "please",
    "hello",
    "here",
    "answer",
    "question",
];

/// A statement made this often (as the same content words) means the model
/// is looping: the answer is not grounded, however well each copy is
/// supported.
const MAX_REPEATS: usize = 3;

/// What the check found.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub grounded: bool,
    /// 1-based passage numbers the answer relies on, in order.
    pub cited: Vec<usize>,
    /// Citation numbers that point to no given passage.
    pub invalid_citations: Vec<usize>,
    /// Claims no passage supports well enough.
    pub unsupported: Vec<String>,
    /// How many sentences made a claim.
    pub claims: usize,
    /// One line for the trace.
    pub reason: String,
}

/// Checks `answer` to `question` against `passages` (passage `n` is
/// `passages[n - 1]`).
pub fn check(question: &str, answer: &str, passages: &[String], min_support: f32) -> Verdict {
    let passage_words: Vec<HashSet<String>> = passages.iter().map(|p| content_words(p).collect()).collect();
    let passage_numbers: Vec<HashSet<String>> = passages.iter().map(|p| numbers(p).collect()).collect();
    let asked: HashSet<String> = content_words(question).collect();
    let asked_numbers: HashSet<String> = numbers(question).collect();
    let mut cited = BTreeSet::new();
    let mut invalid = BTreeSet::new();
    let mut unsupported = Vec::new();
    let mut claims = 0;
    // How often each claim was made, as its words: a small model that loops
    // writes one supported step over and over, which answers nothing.
    let mut said: HashMap<Vec<String>, usize> = HashMap::new();

    for sentence in sentences(answer) {
        let markers = citation_markers(sentence);
        for &n in &markers {
            if n == 0 || n > passages.len() {
                invalid.insert(n);
            }
        }
        let plain = strip_markers(without_list_marker(sentence));
        let words: Vec<String> = content_words(&plain).collect::<BTreeSet<_>>().into_iter().collect();
        let stated: Vec<String> = numbers(&plain).collect();
        let says_something_new =
            words.iter().any(|w| !asked.contains(w)) || stated.iter().any(|n| !asked_numbers.contains(n));
        if !says_something_new {
            // No claim, but a valid marker still counts as a citation.
            cited.extend(markers.iter().copied().filter(|&n| n >= 1 && n <= passages.len()));
            continue;
        }
        claims += 1;
        *said.entry(words.clone()).or_default() += 1;
        let candidates: Vec<usize> = {
            let valid: Vec<usize> =
                markers.iter().copied().filter(|&n| n >= 1 && n <= passages.len()).collect();
            if valid.is_empty() {
                (1..=passages.len()).collect()
            } else {
                valid
            }
        };
        let best = candidates
            .iter()
            .map(|&n| {
                let all_numbers_found = stated.iter().all(|x| passage_numbers[n - 1].contains(x));
                let share = if all_numbers_found { support(&words, &passage_words[n - 1]) } else { 0.0 };
                (n, share)
            })
            .fold(None::<(usize, f32)>, |best, (n, s)| match best {
                Some((_, top)) if top >= s => best,
                _ => Some((n, s)),
            });
        match best {
            Some((n, s)) if s >= min_support => {
                cited.insert(n);
            }
            _ => unsupported.push(sentence.trim().to_owned()),
        }
    }

    let repeats = said.values().copied().max().unwrap_or(0);
    let looping = repeats >= MAX_REPEATS;
    let grounded = claims > 0 && unsupported.is_empty() && invalid.is_empty() && !looping;
    let reason = if !invalid.is_empty() {
        format!("citations {:?} point to no given passage", invalid.iter().collect::<Vec<_>>())
    } else if looping {
        format!("the answer makes the same statement {repeats} times: it loops instead of answering")
    } else if claims == 0 {
        "the answer makes no claim the passages could support".to_owned()
    } else if !unsupported.is_empty() {
        format!("{} of {claims} statements are not supported by the passages", unsupported.len())
    } else {
        format!("all {claims} statements are supported by passages {:?}", cited.iter().collect::<Vec<_>>())
    };
    Verdict {
        grounded,
        cited: cited.into_iter().collect(),
        invalid_citations: invalid.into_iter().collect(),
        unsupported,
        claims,
        reason,
    }
}

/// Share of `words` found in `passage` (a sentence of numbers only, all
/// found, is fully supported).
fn support(words: &[String], passage: &HashSet<String>) -> f32 {
    if words.is_empty() {
        return 1.0;
    }
    let found = words.iter().filter(|w| passage.contains(w.as_str())).count();
    found as f32 / words.len() as f32
}

/// Lower-cased content words (letters), stemmed by [`stem`].
pub fn content_words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3 && w.chars().any(char::is_alphabetic))
        .map(str::to_lowercase)
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .map(|w| stem(&w))
}

/// The numbers a text states (digits, as written).
fn numbers(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_ascii_digit()).filter(|n| !n.is_empty()).map(str::to_owned)
}

/// A crude stem: the plural `s` dropped, then the first six letters.
fn stem(word: &str) -> String {
    let singular = match word.strip_suffix('s') {
        Some(root) if !root.ends_with('s') && root.chars().count() >= 3 => root,
        _ => word,
    };
    singular.chars().take(6).collect()
}

/// Splits on sentence ends and line breaks (list items are sentences).
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (i, &(at, c)) in chars.iter().enumerate() {
        let next = chars.get(i + 1).map(|&(_, n)| n);
        // "2." opening a numbered list item is the item's marker, not a sentence.
        let ends = c == '\n'
            || (matches!(c, '.' | '!' | '?')
                && next.is_none_or(char::is_whitespace)
                && !is_item_number(&text[start..at]));
        if ends {
            let end = at + c.len_utf8();
            if !text[start..end].trim().is_empty() {
                out.push(&text[start..end]);
            }
            start = end;
        }
    }
    if !text[start..].trim().is_empty() {
        out.push(&text[start..]);
    }
    out
}

/// Whether `text` is only a list item's number ("2" of "2. Copy ...").
fn is_item_number(text: &str) -> bool {
    let text = text.trim();
    !text.is_empty() && text.len() <= 3 && text.bytes().all(|b| b.is_ascii_digit())
}

/// `sentence` without the marker of a list item ("2. ", "3) ", "- ", "* ",
/// "• "): a step's number is the list's, not a figure the passage must state.
fn without_list_marker(sentence: &str) -> &str {
    let trimmed = sentence.trim_start();
    let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
    let rest = if (1..=3).contains(&digits) {
        trimmed[digits..].strip_prefix(['.', ')'])
    } else {
        trimmed.strip_prefix(['-', '*', '•'])
    };
    match rest {
        Some(rest) if rest.starts_with(char::is_whitespace) => rest,
        _ => sentence,
    }
}

/// The numbers in `[n]` and `[n, m]` markers.
pub fn citation_markers(text: &str) -> Vec<usize> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        let Some(close) = after.find(']') else { break };
        let inside = &after[..close];
        let numbers: Vec<Option<usize>> = inside.split(',').map(|n| n.trim().parse::<usize>().ok()).collect();
        if !numbers.is_empty() && numbers.iter().all(Option::is_some) {
            found.extend(numbers.into_iter().flatten());
        }
        rest = &after[close + 1..];
    }
    found
}

fn strip_markers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find(']') {
            Some(close) if after[..close].split(',').all(|n| n.trim().parse::<usize>().is_ok()) => {
                rest = &after[close + 1..];
            }
            _ => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passages() -> Vec<String> {
        vec![
            "To restore a snapshot, stop Lore, copy the snapshot over the data directory and start it again."
                .into(),
            "Calibrating instrument 17 takes forty minutes and needs the blue reference weight.".into(),
        ]
    }

    #[test]
    fn supported_statements_are_grounded_and_attributed() {
        let verdict = check(
            "How do I restore?",
            "Stop Lore and copy the snapshot over the data directory [1]. Calibrating instrument 17 needs the blue reference weight.",
            &passages(),
            0.5,
        );
        assert!(verdict.grounded, "{verdict:?}");
        assert_eq!(verdict.cited, vec![1, 2], "the uncited sentence is attributed to passage 2");
        assert_eq!(verdict.claims, 2);
    }

    #[test]
    fn general_knowledge_is_not_grounded() {
        let verdict = check(
            "What is a snapshot?",
            "Snapshots are point-in-time copies used by many databases such as PostgreSQL and MySQL.",
            &passages(),
            0.5,
        );
        assert!(!verdict.grounded);
        assert_eq!(verdict.unsupported.len(), 1);
    }

    #[test]
    fn a_citation_outside_the_passages_fails_the_check() {
        let verdict = check(
            "How do I restore?",
            "Stop Lore and copy the snapshot over the data directory [3].",
            &passages(),
            0.5,
        );
        assert!(!verdict.grounded);
        assert_eq!(verdict.invalid_citations, vec![3]);
    }

    #[test]
    fn a_sentence_is_judged_against_the_passage_it_cites() {
        // True of passage 2, but it cites passage 1.
        let verdict = check(
            "What is needed?",
            "Calibrating instrument 17 needs the blue reference weight [1].",
            &passages(),
            0.5,
        );
        assert!(!verdict.grounded);
    }

    #[test]
    fn an_invented_number_is_not_supported() {
        let question = "How long does calibrating instrument 17 take?";
        let wrong = check(question, "It takes 45 minutes with the blue reference weight.", &passages(), 0.5);
        assert!(!wrong.grounded && wrong.claims == 1, "{wrong:?}");
        let right = check(question, "The calibration takes forty minutes [2].", &passages(), 0.5);
        assert!(right.grounded, "{right:?}");
    }

    #[test]
    fn restating_the_question_claims_nothing() {
        let verdict = check("How do I restore a snapshot?", "To restore a snapshot:", &passages(), 0.5);
        assert_eq!(verdict.claims, 0);
    }

    #[test]
    fn a_numbered_list_is_judged_by_its_steps_not_their_numbers() {
        let question = "How do I restore a snapshot?";
        let steps = "To restore a snapshot:\n1. Stop Lore [1].\n2. Copy the snapshot over the data directory [1].\n3) Start it again [1].";
        let verdict = check(question, steps, &passages(), 0.5);
        assert!(verdict.grounded, "{verdict:?}");
        assert_eq!(verdict.claims, 3, "one claim per step, none for a bare item number");
        let bullets = "- Stop Lore.\n* Copy the snapshot over the data directory.";
        assert!(check(question, bullets, &passages(), 0.5).grounded);
        // A figure inside a step is still a figure the passage must state.
        let invented = check(question, "1. Stop Lore for 25 minutes [1].", &passages(), 0.5);
        assert!(!invented.grounded, "{invented:?}");
        assert_eq!(sentences("1. Stop Lore.\n2. Start it."), vec!["1. Stop Lore.", "2. Start it."]);
    }

    #[test]
    fn an_answer_that_loops_is_not_grounded() {
        let question = "How do I back up the database?";
        let looping = "1. Open the panel and copy the snapshot [1].\n2. Copy the snapshot.\n3. Copy the snapshot.\n4. Copy the snapshot.";
        let verdict = check(question, looping, &passages(), 0.5);
        assert!(!verdict.grounded, "{verdict:?}");
        assert!(verdict.reason.contains("3 times"), "{}", verdict.reason);
        // Twice is emphasis, not a loop.
        let twice = "Copy the snapshot [1].\nThen start Lore again [1].\nCopy the snapshot.";
        assert!(check(question, twice, &passages(), 0.5).grounded);
    }

    #[test]
    fn pleasantries_make_no_claim() {
        let verdict = check("Hello?", "Sure! Happy to help.", &passages(), 0.5);
        assert!(!verdict.grounded);
        assert_eq!(verdict.claims, 0);
        assert_eq!(citation_markers("see [1, 2] and [x] and [3]"), vec![1, 2, 3]);
        assert_eq!(strip_markers("a [1] b [x]"), "a  b [x]");
    }
}
