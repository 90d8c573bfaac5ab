//! A reply that repeats itself: a small model that loops writes one
//! statement until its token budget runs out, which costs the whole budget
//! and answers nothing. [`Repetition`] follows a reply as it is written and
//! says where it began to repeat itself, so the generation can stop there and
//! what came before be judged.
//!
//! A reply repeats itself when a sentence of [`MIN_SENTENCE_WORDS`] words or
//! more is written a second time, or a run of [`RUN_WORDS`] words is. Words
//! are compared in lower case, without punctuation, citation markers (`[2]`)
//! or list numbers (`3.`), so "Copy the snapshot [1]." and "2. Copy the
//! snapshot." are the same sentence.

/// The fewest words a sentence must have for its second copy to count: a
/// procedure's short steps ("Stop Lore.") may well say the same twice.
pub const MIN_SENTENCE_WORDS: usize = 4;

/// The length, in words, of a run whose second copy counts. Long enough
/// that a phrase the passages use twice ("the maximum number of pages in a
/// database") is not one.
pub const RUN_WORDS: usize = 10;

/// A reply as it is written.
#[derive(Clone, Debug, Default)]
pub struct Repetition {
    text: String,
    /// Where it began to repeat itself, once it has.
    cut: Option<usize>,
}

impl Repetition {
    /// Adds the next `piece` of the reply; whether it now repeats itself
    /// (then the pieces after are not read).
    pub fn push(&mut self, piece: &str) -> bool {
        if self.cut.is_none() {
            self.text.push_str(piece);
            self.cut = repeats(&self.text);
        }
        self.cut.is_some()
    }

    /// The reply before it began to repeat itself, once it has.
    pub fn kept(&self) -> Option<&str> {
        self.cut.map(|at| self.text[..at].trim())
    }
}

/// A word of a reply and where it is.
struct Word {
    text: String,
    at: usize,
    /// The index of its sentence.
    sentence: usize,
}

/// Where `text` began to repeat itself (a byte offset: what comes before it
/// is the reply without the repetition), or `None`. A sentence ends at a
/// stop followed by a space or at a line break, never at the end of `text`,
/// which may be cut mid-number as a reply is written.
pub fn repeats(text: &str) -> Option<usize> {
    let (words, sentences) = words(text);
    // A sentence written again: where that copy starts.
    let mut seen: std::collections::HashSet<Vec<&str>> = std::collections::HashSet::new();
    let mut cut: Option<usize> = None;
    for (i, &(start, ended)) in sentences.iter().enumerate() {
        if !ended {
            continue;
        }
        let said: Vec<&str> = words.iter().filter(|w| w.sentence == i).map(|w| w.text.as_str()).collect();
        if said.len() < MIN_SENTENCE_WORDS {
            continue;
        }
        if !seen.insert(said) {
            cut = Some(start);
            break;
        }
    }
    // A run of words written again, not overlapping its first copy: the
    // repeat starts at its sentence, unless that sentence holds some of the
    // first copy too (a reply with no full stops).
    let mut runs: std::collections::HashMap<Vec<&str>, usize> = std::collections::HashMap::new();
    for i in 0..words.len().saturating_sub(RUN_WORDS - 1) {
        let run: Vec<&str> = words[i..i + RUN_WORDS].iter().map(|w| w.text.as_str()).collect();
        match runs.get(&run) {
            Some(&first) if first + RUN_WORDS <= i => {
                let sentence_start = sentences[words[i].sentence].0;
                let first_copy_ends = words[first + RUN_WORDS - 1].sentence;
                let at = if first_copy_ends < words[i].sentence { sentence_start } else { words[i].at };
                cut = Some(cut.map_or(at, |c| c.min(at)));
                break;
            }
            Some(_) => {}
            None => {
                runs.insert(run, i);
            }
        }
    }
    cut
}

/// The words of `text` that say something, each with its offset and
/// sentence; and each sentence's start and whether it has ended.
fn words(text: &str) -> (Vec<Word>, Vec<(usize, bool)>) {
    let mut words = Vec::new();
    let mut sentences: Vec<(usize, bool)> = vec![(0, false)];
    let mut line_start = true;
    let mut in_marker = false;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c.is_alphanumeric() {
            let mut end = at + c.len_utf8();
            while let Some(&(next_at, next)) = chars.peek() {
                if next.is_alphanumeric() || next == '_' || next == '\'' {
                    end = next_at + next.len_utf8();
                    chars.next();
                } else {
                    break;
                }
            }
            let word = &text[at..end];
            let digits = word.bytes().all(|b| b.is_ascii_digit());
            let list_number =
                line_start && digits && chars.peek().is_some_and(|&(_, n)| n == '.' || n == ')');
            let unsaid = list_number || (in_marker && digits);
            if !unsaid {
                let sentence = sentences.len() - 1;
                words.push(Word { text: word.to_lowercase(), at, sentence });
            }
            line_start = false;
            continue;
        }
        match c {
            '[' => in_marker = true,
            ']' => in_marker = false,
            _ => {}
        }
        // The end of the text is not the end of a sentence: while the reply
        // is written, "to 1." may go on "5 GB".
        let next_is_space = chars.peek().is_some_and(|&(_, n)| n.is_whitespace());
        let ends = c == '\n' || (matches!(c, '.' | '!' | '?') && next_is_space);
        if ends {
            let current = sentences.len() - 1;
            // A full stop before anything was said (a list number's) ends nothing.
            if words.last().is_some_and(|w| w.sentence == current) {
                sentences[current].1 = true;
                sentences.push((at + c.len_utf8(), false));
            }
        }
        if c == '\n' {
            line_start = true;
        } else if !c.is_whitespace() {
            line_start = false;
        }
    }
    // A sentence starts after the spaces before it (at its list number, if any).
    for sentence in &mut sentences {
        let rest = &text[sentence.0..];
        sentence.0 += rest.len() - rest.trim_start().len();
    }
    (words, sentences)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What SmolLM2-135M wrote to a question about Debian's git packaging
    /// before it ran out of tokens (shortened): one statement, over and over.
    const LOOPING: &str = "The git-buildpackage tool builds Debian packages from a Git repository [1]. \
        The git-buildpackage tool builds Debian packages from a Git repository [1]. \
        The git-buildpackage tool builds Debian packages from a Git repository [1].";

    #[test]
    fn a_sentence_written_again_is_cut_before_its_second_copy() {
        let at = repeats(LOOPING).expect("the reply loops");
        assert_eq!(
            LOOPING[..at].trim(),
            "The git-buildpackage tool builds Debian packages from a Git repository [1]."
        );
    }

    #[test]
    fn markers_and_list_numbers_do_not_tell_copies_apart() {
        let text = "1. Copy the snapshot over the data directory [1].\n2. Copy the snapshot over the data directory [2].\n";
        let at = repeats(text).expect("the same step twice");
        assert_eq!(&text[..at], "1. Copy the snapshot over the data directory [1].\n");
    }

    #[test]
    fn a_run_of_words_written_again_without_full_stops_is_cut_there() {
        let text = "you can set the port with the port option in the config file and you can set the port with the port option in the config file and you can";
        let at = repeats(text).expect("a run repeats");
        assert_eq!(text[..at].trim(), "you can set the port with the port option in the config file and");
    }

    #[test]
    fn a_reply_that_does_not_repeat_itself_is_left_whole() {
        for text in [
            "Stop Lore [1]. Copy the snapshot over the data directory [1]. Start Lore again [1].",
            // Short steps may repeat; a sentence that differs in a number is another sentence.
            "1. Stop Lore.\n2. Copy the file.\n3. Stop Lore.\n",
            "The limit is 10 pages by default [1]. The limit is 20 pages with the flag set [2].",
            // A phrase used twice, shorter than a run.
            "The maximum number of pages in a database is 4294967294 [1]. The maximum number of attached databases is 10 [2].",
            // The sentence being written is not yet a copy.
            "Copy the snapshot over the data directory. Copy the snapshot over the data",
            // Nor is one that may go on: "… to 1." of "… to 1.5 GB".
            "The buffer grows to 1.5 GB in all. The buffer grows to 1.",
        ] {
            assert_eq!(repeats(text), None, "{text}");
        }
    }

    #[test]
    fn a_reply_is_followed_piece_by_piece() {
        let mut followed = Repetition::default();
        let pieces: Vec<&str> = LOOPING.split_inclusive(' ').collect();
        let read = pieces.iter().take_while(|piece| !followed.push(piece)).count();
        assert!(read < pieces.len() - 1, "the loop is seen as it is written, before its end");
        assert_eq!(
            followed.kept(),
            Some("The git-buildpackage tool builds Debian packages from a Git repository [1].")
        );
        assert!(followed.push(" And more."), "it stays cut");
        assert!(followed.kept().is_some_and(|kept| !kept.contains("more")), "nothing is read after the cut");
    }
}
