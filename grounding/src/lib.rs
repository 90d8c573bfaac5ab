//! The grounding check: is every statement of an answer supported by the
//! passages it was given, and does every citation point to one of them?
//!
//! The check judges facts, not word overlap, and explains every decision.
//! An answer is split into sentences; a sentence claims something only when
//! it says a word or a number the question did not (restating the question,
//! or "Sure!", claims nothing). A claim that cites passages (`[2]`) is judged
//! against those; one that cites nothing against all of them, and it is
//! attributed to the passage that supports it best. A claim is supported by a
//! passage when all of these hold:
//!
//! 1. **Its words are related there.** Its *content words* (three letters or
//!    more, not a stop word, lower-cased, plural `s` dropped, cut to six
//!    letters so that "calibrating" meets "calibration") are found, to the
//!    share `min_support`, within one window of three neighbouring sentences:
//!    words scattered over a long chunk relate nothing.
//! 2. **Its facts are bound to its subject.** Every number (digits or number
//!    words: "forty" is 40), name (`SQLite`, a capitalised word inside a
//!    sentence) and identifier (`SQLITE_MAX_ATTACHED`, `config.toml`, `--port`)
//!    must occur in the passage *near the statement's other words*: within a
//!    dozen words of them in one sentence, or in the sentence before when the
//!    fact's sentence continues it ("It is set to 10.", "The default of
//!    this macro is 1 billion."). Nearness is weighed
//!    by how specific each word is to its sentence in the passage, so the
//!    page's ubiquitous words ("maximum", "number") cannot bind a stray "2"
//!    from another section. A name may also come from the passage's title or
//!    heading, which is the topic of every sentence under it.
//! 3. **Its negation agrees.** The sentence of the passage that best matches
//!    the claim says "not" (or "never", "cannot", …) exactly when the claim
//!    does.
//!
//! The answer is grounded when it makes at least one claim, every claim is
//! supported, no citation points outside the passages and it does not loop.
//! Each claim's [`Judgement`] says which passage, what matched and what did
//! not, and how far above the bar it passed: the answer pipeline sends the
//! claims that passed narrowly to a model for a second opinion (see
//! `answer::verify`).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ops::Range;

use serde::{Deserialize, Serialize};

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

/// Words that negate what a sentence says.
const NEGATIONS: &[&str] =
    &["not", "no", "never", "cannot", "without", "none", "neither", "nor", "nothing", "nowhere"];

/// Number words, as the numbers they say. "one" is left out: it is more
/// often a pronoun ("the one you need") than a count.
const NUMBER_WORDS: &[(&str, u64)] = &[
    ("zero", 0),
    ("two", 2),
    ("three", 3),
    ("four", 4),
    ("five", 5),
    ("six", 6),
    ("seven", 7),
    ("eight", 8),
    ("nine", 9),
    ("ten", 10),
    ("eleven", 11),
    ("twelve", 12),
    ("thirteen", 13),
    ("fourteen", 14),
    ("fifteen", 15),
    ("sixteen", 16),
    ("seventeen", 17),
    ("eighteen", 18),
    ("nineteen", 19),
    ("twenty", 20),
    ("thirty", 30),
    ("forty", 40),
    ("fifty", 50),
    ("sixty", 60),
    ("seventy", 70),
    ("eighty", 80),
    ("ninety", 90),
    ("hundred", 100),
    ("thousand", 1000),
    ("million", 1_000_000),
    ("billion", 1_000_000_000),
];

/// Opening words by which a sentence continues the one before it ("It is
/// set to 10 by default."): its facts may bind to the sentence before.
const CONTINUATIONS: &[&str] = &[
    "it", "its", "this", "that", "these", "those", "they", "their", "such", "which", "both", "either",
    "each", "here", "there",
];

/// Determiners that point back to the sentence before when they come among
/// a sentence's first words ("The default value of this macro").
const REFERRING: &[&str] = &["this", "these", "those", "such"];

/// A statement made this often (as the same content words) means the model
/// is looping: the answer is not grounded, however well each copy is
/// supported.
const MAX_REPEATS: usize = 3;

/// The share of a claim's words, said only outside a span, that makes the
/// span not its quote: a quarter of what it says comes from elsewhere.
const ELSEWHERE_SHARE: f32 = 0.25;

/// How many words either side of a fact count as near it.
const FACT_REACH: usize = 12;

/// The most spans a refused statement offers as saying it in other words.
const MAX_REPHRASINGS: usize = 3;

/// A passage as the model saw it: its page's title and heading (the topic of
/// all of it) and its text.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Passage {
    pub context: String,
    pub text: String,
}

impl Passage {
    pub fn new(context: impl Into<String>, text: impl Into<String>) -> Self {
        Self { context: context.into(), text: text.into() }
    }

    /// A passage without a title or heading.
    pub fn plain(text: impl Into<String>) -> Self {
        Self::new(String::new(), text)
    }

    /// The passage as one text, title first (what the second opinion reads).
    pub fn full_text(&self) -> String {
        if self.context.trim().is_empty() {
            self.text.clone()
        } else {
            format!("{}\n{}", self.context.trim(), self.text)
        }
    }
}

/// What the check found.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub grounded: bool,
    /// 1-based passage numbers the answer relies on, in order.
    pub cited: Vec<usize>,
    /// Citation numbers that point to no given passage.
    pub invalid_citations: Vec<usize>,
    /// Claims no passage supports.
    pub unsupported: Vec<String>,
    /// How many sentences made a claim.
    pub claims: usize,
    /// Each claim's judgement, in the answer's order.
    pub judged: Vec<Judgement>,
    /// Whether the answer repeats one statement [`MAX_REPEATS`] times or more.
    pub looping: Option<usize>,
    /// The verdict and a few claims' judgements, bounded, for the trace's
    /// reason (a statement made again is told once, with its count).
    pub reason: String,
    /// The verdict and every distinct claim's judgement, for the trace's
    /// detail (bounded too, much more loosely).
    pub detail: String,
}

/// How one claim was judged.
#[derive(Clone, Debug, PartialEq)]
pub struct Judgement {
    /// The claim as the answer states it.
    pub statement: String,
    /// The passage it was judged against (the best of its candidates).
    pub passage: Option<usize>,
    pub supported: bool,
    /// How far above the bar the weakest test passed (negative: failed).
    pub margin: f32,
    /// Its words and facts found, as written.
    pub matched: Vec<String>,
    /// Its words not found, and facts not found near its subject.
    pub missing: Vec<String>,
    /// What else decided it: a negation that differs, a second opinion.
    pub notes: Vec<String>,
    /// The sentence (or two) of its passage that says it: what a reader
    /// checks it against. A claim without one is not supported.
    pub support: Option<Support>,
    /// When its words failed the check: the spans that keep its facts,
    /// negation and named subject, best first, which may say it in other
    /// words (see [`Verdict::weigh_rephrasings`]).
    pub rephrasings: Vec<Rephrasing>,
}

/// A span that may say an unsupported statement in other words: it holds
/// each of the statement's facts, negates as the statement does, says most
/// of its words (the most specific weighing most), in a passage naming
/// what the question names. Whether it does is a question of meaning,
/// which the embedder's similarity of the two answers.
#[derive(Clone, Debug, PartialEq)]
pub struct Rephrasing {
    /// The passage's number (1-based).
    pub passage: usize,
    pub support: Support,
}

/// The span of a passage's text that supports a statement: one sentence, or
/// two neighbouring ones. Offsets count characters (Unicode scalar values)
/// of the passage's text, end exclusive.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Support {
    /// The span, verbatim.
    pub quote: String,
    pub start: usize,
    pub end: usize,
    /// The words and facts of the statement the span says, as character
    /// ranges of `quote` (`[start, end)`), in order.
    pub marks: Vec<[usize; 2]>,
}

impl Judgement {
    /// One line for the trace: the statement, its passage, what matched and
    /// what did not.
    pub fn explain(&self) -> String {
        self.explain_naming(usize::MAX)
    }

    /// [`Judgement::explain`] naming at most `words` of the words matched
    /// and of those missing (the rest counted): a line of a bounded reason.
    /// The notes, which decide a claim, are always told whole.
    pub fn explain_naming(&self, words: usize) -> String {
        let statement = shorten(&self.statement, 90);
        let passage = self.passage.map(|n| format!("[{n}]")).unwrap_or_else(|| "no passage".into());
        let mut line = format!(
            "{} \u{ab}{statement}\u{bb} vs {passage}: matched {}",
            if self.supported { "supported" } else { "unsupported" },
            list_some(&self.matched, words)
        );
        if !self.missing.is_empty() {
            line.push_str(&format!("; missing {}", list_some(&self.missing, words)));
        }
        for note in &self.notes {
            line.push_str("; ");
            line.push_str(note);
        }
        line
    }

    /// Marks the claim unsupported on a second opinion.
    pub fn overrule(&mut self, why: impl Into<String>) {
        self.supported = false;
        self.margin = self.margin.min(-0.0001);
        self.notes.push(why.into());
    }
}

impl Verdict {
    /// Indices (into `judged`) of the claims that passed by less than
    /// `margin`: the ones worth a second opinion.
    pub fn narrow_passes(&self, margin: f32) -> Vec<usize> {
        self.judged
            .iter()
            .enumerate()
            .filter(|(_, j)| j.supported && j.margin < margin)
            .map(|(i, _)| i)
            .collect()
    }

    /// The statements the words test refused that a span may say in other
    /// words: each one's index in `judged`, its text as a reader sees it,
    /// and the quotes of its rephrasings, best first.
    pub fn rephrasings(&self) -> Vec<(usize, String, Vec<String>)> {
        self.judged
            .iter()
            .enumerate()
            .filter(|(_, j)| !j.supported && !j.rephrasings.is_empty())
            .map(|(i, j)| {
                let quotes = j.rephrasings.iter().map(|r| r.support.quote.clone()).collect();
                (i, plain_statement(&j.statement), quotes)
            })
            .collect()
    }

    /// Settles the rephrasings offered ([`Verdict::rephrasings`]): for each
    /// statement in `similarities` (its index in `judged`, then how similar
    /// in meaning it is to each of its rephrasings, in order), the closest
    /// span at `min_similarity` or above supports it, by a margin of how far
    /// above; the judgement says which way it went and why. Then the
    /// verdict is recomputed.
    pub fn weigh_rephrasings(&mut self, similarities: &[(usize, Vec<f32>)], min_similarity: f32) {
        for (i, scores) in similarities {
            let Some(judged) = self.judged.get_mut(*i) else { continue };
            let closest = scores
                .iter()
                .copied()
                .enumerate()
                .take(judged.rephrasings.len())
                .max_by(|a, b| a.1.total_cmp(&b.1));
            let offered = std::mem::take(&mut judged.rephrasings);
            let Some((k, similarity)) = closest else { continue };
            let rephrasing = &offered[k];
            if similarity < min_similarity {
                judged.notes.push(format!(
                    "in other words, the closest span that keeps its facts ([{}]) is {similarity:.2} similar in \
                     meaning, below {min_similarity:.2}",
                    rephrasing.passage
                ));
                continue;
            }
            judged.notes.push(format!(
                "said in other words: [{}] \u{ab}{}\u{bb} keeps its facts and is {similarity:.2} similar in meaning \
                 (at least {min_similarity:.2})",
                rephrasing.passage,
                shorten(&rephrasing.support.quote, 90)
            ));
            judged.supported = true;
            judged.margin = similarity - min_similarity;
            judged.passage = Some(rephrasing.passage);
            judged.support = Some(rephrasing.support.clone());
            if !self.cited.contains(&rephrasing.passage) {
                self.cited.push(rephrasing.passage);
                self.cited.sort_unstable();
            }
        }
        self.settle();
    }

    /// Recomputes the verdict after judgements changed (a second opinion).
    pub fn settle(&mut self) {
        self.unsupported = self.judged.iter().filter(|j| !j.supported).map(|j| j.statement.clone()).collect();
        self.grounded = self.claims > 0
            && self.unsupported.is_empty()
            && self.invalid_citations.is_empty()
            && self.looping.is_none();
        (self.reason, self.detail) = self.describe();
    }

    /// The reason and the detail: the verdict's head line, then the claims'
    /// judgements with each statement made again told once, with its count.
    /// The reason names [`REASON_STATEMENTS`] of them, the unsupported
    /// first (they decided a refusal), and counts the rest.
    fn describe(&self) -> (String, String) {
        let head = if !self.invalid_citations.is_empty() {
            format!("citations {:?} point to no given passage", self.invalid_citations)
        } else if let Some(repeats) = self.looping {
            format!("the answer makes the same statement {repeats} times: it loops instead of answering")
        } else if self.claims == 0 {
            "the answer makes no claim the passages could support".to_owned()
        } else if !self.unsupported.is_empty() {
            format!(
                "{} of {} statements are not supported by the passages",
                self.unsupported.len(),
                self.claims
            )
        } else {
            format!("all {} statements are supported by passages {:?}", self.claims, self.cited)
        };
        // Distinct statements in the answer's order, each with how often it was made.
        let mut distinct: Vec<(&Judgement, usize, String)> = Vec::new();
        for judgement in &self.judged {
            let key = statement_key(&judgement.statement);
            match distinct.iter_mut().find(|(j, _, k)| *k == key && j.supported == judgement.supported) {
                Some((_, count, _)) => *count += 1,
                None => distinct.push((judgement, 1, key)),
            }
        }
        let line = |(judgement, count): (&Judgement, usize), words: usize| match count {
            1 => judgement.explain_naming(words),
            n => format!("{} (the same statement {n} times)", judgement.explain_naming(words)),
        };
        let detail = std::iter::once(head.clone())
            .chain(distinct.iter().map(|(j, n, _)| line((j, *n), usize::MAX)))
            .collect::<Vec<_>>()
            .join("\n");
        let mut named: Vec<&(&Judgement, usize, String)> =
            distinct.iter().filter(|(j, _, _)| !j.supported).collect();
        named.extend(distinct.iter().filter(|(j, _, _)| j.supported));
        let mut reason = vec![head];
        reason.extend(named.iter().take(REASON_STATEMENTS).map(|(j, n, _)| line((j, *n), REASON_WORDS)));
        if named.len() > REASON_STATEMENTS {
            reason.push(format!(
                "and {} more statements (the full detail is beside this reason)",
                named.len() - REASON_STATEMENTS
            ));
        }
        (shorten(&reason.join("\n"), REASON_CHARS), shorten(&detail, DETAIL_CHARS))
    }
}

/// How many distinct statements a grounding reason explains.
pub const REASON_STATEMENTS: usize = 4;
/// How many of a statement's words matched (and missing) a reason's line
/// names; the rest are counted.
pub const REASON_WORDS: usize = 8;
/// The longest grounding reason, in characters: a trace is read at a glance.
/// Its lines are bounded (a shortened statement, a few words, the notes), so
/// this only guards against the unforeseen.
pub const REASON_CHARS: usize = 1_500;
/// The longest grounding detail, in characters.
pub const DETAIL_CHARS: usize = 12_000;

/// A statement as compared for repetition: without its list number or
/// bullet and its citation markers, in lower case, spaces collapsed.
fn statement_key(statement: &str) -> String {
    strip_markers(without_list_marker(statement))
        .to_lowercase()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Checks `answer` to `question` against `passages` (passage `n` is
/// `passages[n - 1]`).
pub fn check(question: &str, answer: &str, passages: &[Passage], min_support: f32) -> Verdict {
    let evidence: Vec<Evidence> = passages.iter().map(Evidence::new).collect();
    let asked_tokens = tokens(question);
    let asked: HashSet<String> = asked_tokens.iter().filter_map(|t| t.stem.clone()).collect();
    let asked_numbers: HashSet<String> = asked_tokens.iter().filter_map(|t| t.number.clone()).collect();
    let mut cited = BTreeSet::new();
    let mut invalid = BTreeSet::new();
    let mut judged = Vec::new();
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
        let valid: Vec<usize> = markers.iter().copied().filter(|&n| n >= 1 && n <= passages.len()).collect();
        let plain = strip_markers(without_list_marker(sentence));
        let claim = Claim::new(&plain, &asked_tokens);
        let says_something_new = claim.words.iter().any(|(stem, _)| !asked.contains(stem))
            || claim.numbers().any(|n| !asked_numbers.contains(n));
        if !says_something_new {
            // No claim, but a valid marker still counts as a citation.
            cited.extend(valid);
            continue;
        }
        *said.entry(claim.words.iter().map(|(stem, _)| stem.clone()).collect()).or_default() += 1;
        let candidates: Vec<usize> = if valid.is_empty() { (1..=passages.len()).collect() } else { valid };
        let mut best: Option<Judgement> = None;
        for &n in &candidates {
            let mut judgement = claim.judge(&evidence[n - 1], min_support);
            judgement.passage = Some(n);
            let better = match &best {
                None => true,
                Some(top) => (judgement.supported, judgement.margin) > (top.supported, top.margin),
            };
            if better {
                best = Some(judgement);
            }
        }
        let mut judgement = best.unwrap_or_else(|| Judgement {
            statement: String::new(),
            passage: None,
            supported: false,
            margin: -min_support,
            matched: Vec::new(),
            missing: Vec::new(),
            notes: vec!["there are no passages".into()],
            support: None,
            rephrasings: Vec::new(),
        });
        judgement.statement = sentence.trim().to_owned();
        if judgement.supported {
            cited.extend(judgement.passage);
        } else {
            judgement.rephrasings = rephrasings(&claim, &evidence, &candidates, min_support);
        }
        judged.push(judgement);
    }

    let repeats = said.values().copied().max().unwrap_or(0);
    let mut verdict = Verdict {
        grounded: false,
        cited: cited.into_iter().collect(),
        invalid_citations: invalid.into_iter().collect(),
        unsupported: Vec::new(),
        claims: judged.len(),
        judged,
        looping: (repeats >= MAX_REPEATS).then_some(repeats),
        reason: String::new(),
        detail: String::new(),
    };
    verdict.settle();
    verdict
}

/// The most sentences a quoted answer serves.
pub const MAX_QUOTED: usize = 3;

/// A quote-first answer: the passages' own sentences that the model's reply
/// copied, verbatim.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Quoted {
    /// The sentences, each with its passage's marker (`… [2].`), one a
    /// line, in the reply's order; empty when nothing was copied.
    pub text: String,
    /// How many sentences it quotes.
    pub sentences: usize,
    /// The reply's sentences that copy none of the passages' (left out).
    pub uncopied: Vec<String>,
    /// The reply's sentences that copy a passage's sentence but state a
    /// number or name it does not (left out: the model's choice of them is
    /// not to be trusted).
    pub altered: Vec<String>,
}

impl Quoted {
    /// One line for the trace.
    pub fn explain(&self) -> String {
        let mut line = match self.sentences {
            0 => "the reply copies no sentence of the passages".to_owned(),
            1 => "the answer quotes 1 sentence of the passages verbatim".to_owned(),
            n => format!("the answer quotes {n} sentences of the passages verbatim"),
        };
        if !self.uncopied.is_empty() {
            line.push_str(&format!(
                "; {} sentences of the reply copy none and are left out",
                self.uncopied.len()
            ));
        }
        for altered in &self.altered {
            line.push_str(&format!(
                "; left out, as it changes the facts of the sentence it copies: \u{ab}{}\u{bb}",
                shorten(altered, 90)
            ));
        }
        line
    }
}

/// Quote-first: each statement of the model's `reply` is matched to the
/// sentence of the passages it copies (its words found there to the share
/// `min_support`, the most specific weighing most; among the passages it
/// cites, or all; a sentence that says none of the question's words, nor
/// continues one that does, or lacks a number the question states, or
/// stands in a passage that never names what the question names, answers
/// something else and is never chosen),
/// and the answer is those sentences, verbatim, at most
/// [`MAX_QUOTED`]. The model only chooses: a number or a name in the answer
/// is one the passages state. A reply sentence that copies one but states a
/// number or name it does not (an "improved" copy) is left out, so a reply
/// whose answer is an improved copy has nothing to serve.
pub fn quote(question: &str, reply: &str, passages: &[Passage], min_support: f32) -> Quoted {
    let evidence: Vec<Evidence> = passages.iter().map(Evidence::new).collect();
    let asked_tokens = tokens(question);
    let asked: HashSet<String> = asked_tokens.iter().filter_map(|t| t.stem.clone()).collect();
    let numbers: Vec<String> = asked_tokens.iter().filter_map(|t| t.number.clone()).collect();
    let strong_names: Vec<&Token> = asked_tokens.iter().filter(|t| t.strong_name).collect();
    let question_terms = Asked { stems: &asked, numbers: &numbers, strong_names: &strong_names };
    let mut chosen: Vec<(usize, usize)> = Vec::new();
    let mut quoted = Quoted::default();
    for sentence in sentences(reply) {
        let markers: Vec<usize> =
            citation_markers(sentence).into_iter().filter(|&n| n >= 1 && n <= passages.len()).collect();
        let plain = strip_markers(without_list_marker(sentence));
        let claim = Claim::new(&plain, &asked_tokens);
        // What it states beyond the question: the question's words around a
        // figure ("The default maximum is 10.") state the figure.
        let stated: Vec<&Fact> =
            claim.facts.iter().filter(|f| !claim.asked_facts.contains(f.shown())).collect();
        if !claim.words.iter().any(|(stem, _)| !asked.contains(stem)) && stated.is_empty() {
            continue;
        }
        // A bare figure ("The answer is: 8.") is matched by the question's words.
        let words = if claim.words.is_empty() { &claim.subject } else { &claim.words };
        let candidates: Vec<usize> =
            if markers.is_empty() { (1..=passages.len()).collect() } else { markers };
        // The sentence holding what it states, if one is copied; else the
        // one its words copy, whose facts it then changed.
        let best = [true, false].into_iter().find_map(|holding| {
            copied_sentence(&evidence, &candidates, words, &stated, holding, min_support, &question_terms)
        });
        let Some((_, n, i)) = best else {
            quoted.uncopied.push(sentence.trim().to_owned());
            continue;
        };
        // Its numbers and unmistakable names (identifiers, inner capitals)
        // are the copied sentence's, the question's or the page's title's.
        let same = |a: &Token, b: &Token| match &a.number {
            Some(number) => b.number.as_ref() == Some(number),
            None => a.lower == b.lower,
        };
        let copied = &evidence[n - 1].sentences[i];
        let title = &evidence[n - 1].sentences[0];
        let altered =
            tokens(&plain).into_iter().filter(|t| t.number.is_some() || t.strong_name).any(|fact| {
                ![copied, title, &asked_tokens]
                    .iter()
                    .any(|known| known.iter().any(|token| same(&fact, token)))
            });
        if altered {
            quoted.altered.push(sentence.trim().to_owned());
            continue;
        }
        if !chosen.contains(&(n, i)) && chosen.len() < MAX_QUOTED {
            chosen.push((n, i));
        }
    }
    let cited: Vec<String> = chosen
        .iter()
        .filter_map(|&(n, i)| {
            let evidence = &evidence[n - 1];
            let text = evidence.text.get(evidence.ranges[i].clone())?.trim();
            // The marker goes before the sentence's closing stop.
            Some(match text.char_indices().next_back() {
                Some((at, '.' | '!' | '?' | ':')) => {
                    format!("{} [{n}]{}", text[..at].trim_end(), &text[at..])
                }
                _ => format!("{text} [{n}]"),
            })
        })
        .collect();
    quoted.sentences = cited.len();
    // One a line: a passage's list item has no stop to end it.
    quoted.text = cited.join("\n");
    quoted
}

/// What a question asks, as quote-first matches sentences to it.
struct Asked<'a> {
    /// Stems of its content words.
    stems: &'a HashSet<String>,
    /// The numbers it states ("guide 5").
    numbers: &'a [String],
    /// The identifiers and products it names.
    strong_names: &'a [&'a Token],
}

/// The passage sentence a reply sentence copies, as (score, passage number,
/// sentence): of the `candidates` passages' sentences that answer what is
/// `asked`, the one holding the most of its `words` (to the share
/// `min_support`, the most specific weighing most); when `holding`, only
/// among those stating each of its `stated` facts.
fn copied_sentence(
    evidence: &[Evidence],
    candidates: &[usize],
    words: &[(String, String)],
    stated: &[&Fact],
    holding: bool,
    min_support: f32,
    asked: &Asked,
) -> Option<(f32, usize, usize)> {
    let mut best: Option<(f32, usize, usize)> = None;
    for &n in candidates {
        let evidence = &evidence[n - 1];
        // A passage that never names what the question names (an
        // identifier, `PostgreSQL`) is about something else.
        if !asked.strong_names.iter().all(|name| evidence.mentions(name)) {
            continue;
        }
        for i in 1..evidence.sentences.len() {
            let continued = i > 1 && evidence.continues[i];
            // A number of the question ("guide 5") is in the sentence,
            // the one it continues, or the page's title or heading.
            let holds = |j: usize, number: &String| {
                evidence.sentences[j].iter().any(|t| t.number.as_ref() == Some(number))
            };
            let numbered = asked
                .numbers
                .iter()
                .all(|number| holds(i, number) || holds(0, number) || (continued && holds(i - 1, number)));
            if !numbered {
                continue;
            }
            // What it serves is this sentence: it must say the facts itself,
            // in a passage that speaks of all the question asks about (a
            // figure of another subject is not the answer).
            if holding
                && (!stated.iter().all(|fact| evidence.sentences[i].iter().any(|t| fact.is_in(t)))
                    || !asked
                        .stems
                        .iter()
                        .all(|stem| evidence.spread.contains_key(stem) || evidence.topic.contains(stem)))
            {
                continue;
            }
            // A sentence that says none of the question's words (itself,
            // or the sentence it continues) answers something else.
            let speaks_of = |j: usize| {
                evidence.sentences[j].iter().any(|t| t.stem.as_ref().is_some_and(|s| asked.stems.contains(s)))
            };
            if !(speaks_of(i) || (continued && speaks_of(i - 1))) {
                continue;
            }
            let stems: HashSet<&String> =
                evidence.sentences[i].iter().filter_map(|t| t.stem.as_ref()).collect();
            let found: Vec<&String> =
                words.iter().map(|(stem, _)| stem).filter(|stem| stems.contains(stem)).collect();
            if share(found.len(), words.len()) < min_support {
                continue;
            }
            let score: f32 = found.iter().map(|stem| evidence.weight(stem)).sum();
            if best.is_none_or(|(top, _, _)| score > top) {
                best = Some((score, n, i));
            }
        }
    }
    best
}

/// A statement of an answer as a reader sees it apart: without its list
/// marker and its citation markers, spaces collapsed.
pub fn plain_statement(statement: &str) -> String {
    strip_markers(without_list_marker(statement)).split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The sentence of `passage`'s text closest to `question` (its most
/// specific words weighing most), with the question's words marked; the
/// first sentence when none shares a word with it. What a refusal shows of
/// a passage that may be related.
pub fn closest_sentence(question: &str, passage: &Passage) -> Option<Support> {
    let evidence = Evidence::new(passage);
    let asked = Claim::new(question, &[]);
    // The most specific of the question's words, then the most words: a
    // heading line ("Maximum Number Of Rows In A Table.") says less than the
    // sentence under it.
    let mut best: Option<((f32, usize), usize)> = None;
    for i in 1..evidence.sentences.len() {
        let score = asked.weighed_in(&evidence, i);
        let key = (score, evidence.sentences[i].iter().filter(|t| t.stem.is_some()).count());
        if score > 0.0 && best.is_none_or(|((top, words), _)| key.0 > top || (key.0 == top && key.1 > words))
        {
            best = Some((key, i));
        }
    }
    let at = best.map(|(_, i)| i).or_else(|| (evidence.sentences.len() > 1).then_some(1))?;
    evidence.quote(at, at, &asked)
}

/// The sentences of `passage`'s text a small model reads to choose its
/// quotes from: the `max` that say the most of `question`'s words (the most
/// specific weighing most; none that says none of them), each with the
/// sentence it continues and the one continuing it ("The default value of
/// this macro is …"), in the passage's order, with "…" where sentences
/// were left out. Quote-first only ever serves a sentence that says the
/// question's words or continues one that does, so the model reads less
/// and loses little it could quote.
pub fn quotable(question: &str, passage: &Passage, max: usize) -> String {
    let evidence = Evidence::new(passage);
    let asked = Claim::new(question, &[]);
    let last = evidence.sentences.len().saturating_sub(1);
    let mut scored: Vec<(f32, usize)> =
        (1..=last).map(|i| (asked.weighed_in(&evidence, i), i)).filter(|(score, _)| *score > 0.0).collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut kept = BTreeSet::new();
    for &(_, i) in scored.iter().take(max) {
        kept.insert(i);
        if i > 1 && evidence.continues[i] {
            kept.insert(i - 1);
        }
        if i < last && evidence.continues[i + 1] {
            kept.insert(i + 1);
        }
    }
    let mut text = String::new();
    let mut previous = 0;
    for i in kept {
        let Some(sentence) = evidence.text.get(evidence.ranges[i].clone()) else { continue };
        if previous + 1 != i {
            text.push_str(if text.is_empty() { "… " } else { " … " });
        } else if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(sentence.trim());
        previous = i;
    }
    if previous > 0 && previous < last {
        text.push_str(" …");
    }
    text
}

/// One word of a text, as the check sees it.
#[derive(Clone, Debug, Default)]
struct Token {
    /// The word lower-cased, as written (an identifier whole).
    lower: String,
    /// Its stem, when it is a content word.
    stem: Option<String>,
    /// The number it states, normalised ("1,000" and "thousand" are 1000).
    number: Option<String>,
    /// A name or identifier: a fact the passage must state.
    name: bool,
    /// A name beyond doubt (inner capitals, all capitals, an identifier),
    /// credited from a passage's title to all of the passage.
    strong_name: bool,
    negation: bool,
}

/// A passage, cut into sentences of tokens, with how many sentences hold
/// each stem (its title and heading are sentence 0).
struct Evidence {
    sentences: Vec<Vec<Token>>,
    /// Where each sentence is in the passage's text, in bytes (the title's,
    /// sentence 0, is empty).
    ranges: Vec<Range<usize>>,
    /// The passage's text, which spans quote.
    text: String,
    /// Sentences that continue the one before.
    continues: Vec<bool>,
    /// Stems of the strong names of the title and heading.
    topic: HashSet<String>,
    /// Names and identifiers of the title and heading, lower-cased.
    topic_names: HashSet<String>,
    /// In how many sentences each stem occurs.
    spread: HashMap<String, usize>,
}

impl Evidence {
    fn new(passage: &Passage) -> Self {
        let context = tokens(&passage.context);
        let topic = context.iter().filter(|t| t.strong_name).filter_map(|t| t.stem.clone()).collect();
        let topic_names = context.iter().filter(|t| t.name).map(|t| t.lower.clone()).collect();
        let mut sentences = vec![context];
        let mut continues = vec![false];
        // The title's is empty.
        let mut ranges: Vec<Range<usize>> = Vec::new();
        ranges.push(0..0);
        for sentence in self::sentences(&passage.text) {
            let at = offset_in(&passage.text, sentence);
            ranges.push(at..at + sentence.len());
            let opening: Vec<String> = sentence
                .split_whitespace()
                .take(5)
                .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase())
                .collect();
            let tokens = tokens(sentence);
            let content = tokens.iter().filter(|t| t.stem.is_some()).count();
            let opens_with_reference = opening.first().is_some_and(|w| CONTINUATIONS.contains(&w.as_str()));
            // "The default value of this macro is …" speaks of the sentence before.
            let refers_early = opening.iter().any(|w| REFERRING.contains(&w.as_str()));
            continues.push(opens_with_reference || refers_early || content <= 2);
            sentences.push(tokens);
        }
        let mut spread: HashMap<String, usize> = HashMap::new();
        for sentence in &sentences {
            let stems: HashSet<&String> = sentence.iter().filter_map(|t| t.stem.as_ref()).collect();
            for stem in stems {
                *spread.entry(stem.clone()).or_default() += 1;
            }
        }
        Self { sentences, ranges, text: passage.text.clone(), continues, topic, topic_names, spread }
    }

    /// How specific `stem` is to the sentences that hold it: rare words weigh
    /// more; a word the passage never says weighs most.
    fn weight(&self, stem: &str) -> f32 {
        let total = self.sentences.len() as f32;
        let holding = self.spread.get(stem).copied().unwrap_or(0).max(1) as f32;
        (1.0 + total / holding).ln()
    }

    /// The tokens near position `at` of sentence `i`, with the sentence
    /// before when sentence `i` continues it.
    fn near(&self, i: usize, at: usize) -> Vec<&Token> {
        let sentence = &self.sentences[i];
        let from = at.saturating_sub(FACT_REACH);
        let to = (at + FACT_REACH + 1).min(sentence.len());
        let mut near: Vec<&Token> = sentence[from..to].iter().collect();
        if i > 1 && self.continues[i] {
            near.extend(self.sentences[i - 1].iter());
        }
        near
    }

    /// Whether the passage (its title and heading included) says `name`.
    fn mentions(&self, name: &Token) -> bool {
        let by_stem = name
            .stem
            .as_ref()
            .is_some_and(|stem| self.spread.contains_key(stem) || self.topic.contains(stem));
        by_stem
            || self.topic_names.contains(&name.lower)
            || self.sentences.iter().flatten().any(|token| token.lower == name.lower)
    }

    /// Sentences `from` to `to` of the text, verbatim, with `claim`'s words
    /// and facts marked.
    fn quote(&self, from: usize, to: usize, claim: &Claim) -> Option<Support> {
        let range = self.ranges.get(from)?.start..self.ranges.get(to)?.end;
        let raw = self.text.get(range.clone())?;
        let quote = raw.trim();
        if quote.is_empty() {
            return None;
        }
        let start = self.text[..range.start + offset_in(raw, quote)].chars().count();
        Some(Support {
            quote: quote.to_owned(),
            start,
            end: start + quote.chars().count(),
            marks: claim.marks(quote),
        })
    }

    /// Sentences `i - 1` to `i + 1` of the text (not the title).
    fn around(&self, i: usize) -> impl Iterator<Item = &Token> {
        let from = i.saturating_sub(1).max(1);
        let to = (i + 1).min(self.sentences.len() - 1);
        self.sentences[from..=to].iter().flatten()
    }
}

/// A claim: one sentence of an answer.
struct Claim {
    /// Its content words: stem → the word as written.
    words: Vec<(String, String)>,
    /// The words its facts must be near: its own, or with the question's
    /// when it says too little to name a subject ("It is 10.").
    subject: Vec<(String, String)>,
    /// Numbers, names and identifiers, as (normalised, as written).
    facts: Vec<Fact>,
    negated: bool,
    /// Stems of the question's content words.
    asked: HashSet<String>,
    /// The question's numbers and names, as facts are shown.
    asked_facts: HashSet<String>,
    /// The names and identifiers the question asks about.
    asked_names: Vec<Token>,
}

#[derive(Clone, Debug)]
enum Fact {
    Number(String),
    Name(String),
}

impl Fact {
    fn shown(&self) -> &str {
        match self {
            Fact::Number(n) | Fact::Name(n) => n,
        }
    }

    fn is_in(&self, token: &Token) -> bool {
        match self {
            Fact::Number(n) => token.number.as_deref() == Some(n.as_str()),
            Fact::Name(name) => token.lower == *name,
        }
    }
}

impl Claim {
    fn new(text: &str, question: &[Token]) -> Self {
        let said = tokens(text);
        let mut words: Vec<(String, String)> = Vec::new();
        let mut facts: Vec<Fact> = Vec::new();
        for token in &said {
            if let Some(stem) = &token.stem {
                if !words.iter().any(|(s, _)| s == stem) {
                    words.push((stem.clone(), token.lower.clone()));
                }
            }
            let fact = match (&token.number, token.name) {
                (Some(n), _) => Some(Fact::Number(n.clone())),
                (None, true) => Some(Fact::Name(token.lower.clone())),
                _ => None,
            };
            if let Some(fact) = fact {
                if !facts.iter().any(|f| f.shown() == fact.shown()) {
                    facts.push(fact);
                }
            }
        }
        let mut subject = words.clone();
        if subject.len() < 2 {
            for token in question {
                if let Some(stem) = &token.stem {
                    if !subject.iter().any(|(s, _)| s == stem) {
                        subject.push((stem.clone(), token.lower.clone()));
                    }
                }
            }
        }
        let asked = question.iter().filter_map(|t| t.stem.clone()).collect();
        let asked_facts = question
            .iter()
            .filter_map(|t| t.number.clone().or_else(|| t.name.then(|| t.lower.clone())))
            .collect();
        let asked_names = question.iter().filter(|t| t.name && t.number.is_none()).cloned().collect();
        Self {
            words,
            subject,
            facts,
            negated: said.iter().any(|t| t.negation),
            asked,
            asked_facts,
            asked_names,
        }
    }

    fn numbers(&self) -> impl Iterator<Item = &String> {
        self.facts.iter().filter_map(|f| match f {
            Fact::Number(n) => Some(n),
            Fact::Name(_) => None,
        })
    }

    /// How well `evidence` supports this claim.
    fn judge(&self, evidence: &Evidence, min_support: f32) -> Judgement {
        let mut matched = Vec::new();
        let mut missing = Vec::new();
        let mut notes = Vec::new();

        // 1. Its words, related within three neighbouring sentences.
        let (support, window) = (1..evidence.sentences.len())
            .map(|i| {
                let stems: HashSet<&String> = evidence.around(i).filter_map(|t| t.stem.as_ref()).collect();
                let found = self
                    .words
                    .iter()
                    .filter(|(stem, _)| stems.contains(stem) || evidence.topic.contains(stem))
                    .count();
                (share(found, self.words.len()), i)
            })
            .fold((if self.words.is_empty() { 1.0 } else { 0.0 }, 0), |best, next| {
                if next.0 > best.0 {
                    next
                } else {
                    best
                }
            });
        let related: HashSet<&String> = if window > 0 {
            evidence.around(window).filter_map(|t| t.stem.as_ref()).collect()
        } else {
            HashSet::new()
        };
        for (stem, word) in &self.words {
            if related.contains(stem) || evidence.topic.contains(stem) {
                matched.push(word.clone());
            } else {
                missing.push(word.clone());
            }
        }
        let mut margin = support - min_support;

        // 2. Each fact, near the subject.
        let mut bound_in: Option<(f32, usize)> = None;
        // For each fact bound in the text, the sentences it is bound in (a
        // fact may be stated twice): its span holds one of each.
        let mut anchors: Vec<Vec<usize>> = Vec::new();
        for fact in &self.facts {
            match self.binding(fact, evidence) {
                Some((coverage, sentence)) => {
                    if coverage >= min_support {
                        matched.push(fact.shown().to_owned());
                        if sentence > 0 {
                            anchors.push(self.bound_sentences(fact, evidence, min_support));
                        }
                    } else {
                        missing.push(format!("{} (not near the statement's other words)", fact.shown()));
                    }
                    margin = margin.min(coverage - min_support);
                    if sentence > 0 && bound_in.is_none_or(|(top, _)| coverage > top) {
                        bound_in = Some((coverage, sentence));
                    }
                }
                None => {
                    missing.push(format!("{} (not in the passage)", fact.shown()));
                    margin = margin.min(-min_support);
                }
            }
        }

        // A fact about what the question asks needs a passage that speaks of
        // it: a word the claim shares with the question, absent from the
        // whole passage, means the passage is about something else.
        // The question's words already said to be absent.
        let mut absent: HashSet<&str> = HashSet::new();
        if !self.facts.is_empty() {
            for (stem, word) in &self.words {
                let asked = self.asked.contains(stem);
                let anywhere = evidence.spread.contains_key(stem) || evidence.topic.contains(stem);
                if asked && !anywhere {
                    absent.insert(word);
                    notes.push(format!(
                        "the passage never mentions \"{word}\", which the question asks about"
                    ));
                    margin = margin.min(-0.0001);
                }
            }
        }

        // A name the question asks about (a product, an option) that the
        // passage never mentions: the passage is about something else,
        // whatever the statement says.
        for name in &self.asked_names {
            if !absent.contains(name.lower.as_str()) && !evidence.mentions(name) {
                notes
                    .push(format!("the passage never mentions \"{}\", which the question names", name.lower));
                margin = margin.min(-0.0001);
            }
        }

        // What the statement adds to the question must be in the passage,
        // related as above: one that repeats the question's words around
        // an addition the passage never relates answers nothing.
        let added: Vec<&str> = self
            .words
            .iter()
            .filter(|(stem, _)| !self.asked.contains(stem))
            .map(|(_, word)| word.as_str())
            .chain(self.facts.iter().map(Fact::shown).filter(|shown| !self.asked_facts.contains(*shown)))
            .collect();
        if !added.is_empty() && !added.iter().any(|word| matched.iter().any(|m| m == word)) {
            notes.push(format!(
                "nothing it adds to the question is in the passage near the question's words ({})",
                list(&added.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>())
            ));
            margin = margin.min(-0.0001);
        }

        // 3. Negation, in the sentence its facts bind to, or else the one
        //    that best matches its words.
        if let Some(anchor) = bound_in.map(|(_, i)| i).or_else(|| self.anchor(evidence)) {
            let says_not = evidence.sentences[anchor].iter().any(|t| t.negation);
            if says_not != self.negated {
                notes.push(if self.negated {
                    "the statement negates what the passage affirms".to_owned()
                } else {
                    "the passage negates what the statement affirms".to_owned()
                });
                margin = margin.min(-0.0001);
            }
        }

        // 4. A span to quote: one sentence, or two neighbouring ones, that
        //    hold its facts and its words.
        let support = if margin >= 0.0 { self.span(evidence, &anchors, min_support) } else { None };
        if margin >= 0.0 && support.is_none() {
            notes.push(if anchors.len() > 1 {
                "its facts are stated in sentences of the passage too far apart to quote together".to_owned()
            } else {
                "no sentence of the passage, nor two neighbouring ones, says it".to_owned()
            });
            margin = margin.min(-0.0001);
        }

        Judgement {
            statement: String::new(),
            passage: None,
            supported: margin >= 0.0,
            margin,
            matched,
            missing,
            notes,
            support,
            rephrasings: Vec::new(),
        }
    }

    /// The spans of `evidence` that may say the claim in other words, as
    /// (the weight of its words they say, first sentence, last sentence),
    /// best first: one sentence each, or a sentence with the one it
    /// continues ("This limit is 10."). Each holds every fact of the claim (a name
    /// may be the title's), one of its own facts in its text, negates in
    /// the sentences stating those as the claim does, and says its words,
    /// and those it shares with the question, to the share `min_support`. None for a claim without words or
    /// without a fact beyond the question's (closeness of meaning alone
    /// would then decide), or in a passage that never names what the
    /// question names.
    fn rephrased_spans(&self, evidence: &Evidence, min_support: f32) -> Vec<(f32, usize, usize)> {
        let own: Vec<&Fact> = self.facts.iter().filter(|f| !self.asked_facts.contains(f.shown())).collect();
        let Some(last) = evidence.sentences.len().checked_sub(1).filter(|&last| last > 0) else {
            return Vec::new();
        };
        if self.words.is_empty() || own.is_empty() || !self.asked_names.iter().all(|n| evidence.mentions(n)) {
            return Vec::new();
        }
        // Each sentence, and each with the one before when it continues it.
        let candidates = (1..=last).flat_map(|i| {
            let joined = (i > 1 && evidence.continues[i]).then_some((i - 1, i));
            std::iter::once((i, i)).chain(joined)
        });
        let mut spans = Vec::new();
        for (from, to) in candidates {
            let span = &evidence.sentences[from..=to];
            let in_span = |fact: &Fact| span.iter().flatten().any(|t| fact.is_in(t));
            let in_title = |fact: &Fact| matches!(fact, Fact::Name(n) if evidence.topic_names.contains(n));
            if !self.facts.iter().all(|f| in_span(f) || in_title(f)) || !own.iter().any(|f| in_span(f)) {
                continue;
            }
            // A negation near one of its own facts ("WITHOUT ROWID" a
            // clause away is a name, not a denial).
            let negates = span.iter().any(|sentence| {
                sentence.iter().enumerate().filter(|(_, t)| t.negation).any(|(j, _)| {
                    sentence
                        .iter()
                        .enumerate()
                        .any(|(k, t)| k.abs_diff(j) <= FACT_REACH && own.iter().any(|f| f.is_in(t)))
                })
            });
            if negates != self.negated {
                continue;
            }
            let stems: HashSet<&String> = span.iter().flatten().filter_map(|t| t.stem.as_ref()).collect();
            let held: Vec<&String> = self
                .words
                .iter()
                .map(|(stem, _)| stem)
                .filter(|stem| stems.contains(*stem) || evidence.topic.contains(*stem))
                .collect();
            // Of what it shares with the question (its subject), the span
            // says as much.
            let asked = self.words.iter().filter(|(stem, _)| self.asked.contains(stem)).count();
            let asked_held = held.iter().filter(|stem| self.asked.contains(**stem)).count();
            if share(held.len(), self.words.len()) >= min_support && share(asked_held, asked) >= min_support {
                let said: f32 = held.iter().map(|stem| evidence.weight(stem)).sum();
                spans.push((said, from, to));
            }
        }
        // The most said first; of equals, the shorter.
        spans.sort_by(|a, b| b.0.total_cmp(&a.0).then((a.2 - a.1).cmp(&(b.2 - b.1))));
        spans
    }

    /// The span of `evidence` that supports the claim: one sentence, or else
    /// two neighbouring sentences, holding a sentence each of its facts is
    /// bound in (`anchors`, per fact) and its words to the share
    /// `min_support`, and fewer than [`ELSEWHERE_SHARE`] of them among the
    /// words it adds to the question that the passage says only outside it;
    /// of those, the one saying its most specific words. `None` when no such
    /// span exists.
    fn span(&self, evidence: &Evidence, anchors: &[Vec<usize>], min_support: f32) -> Option<Support> {
        let last = evidence.sentences.len().checked_sub(1).filter(|&last| last > 0)?;
        (0..=1).find_map(|extra| self.best_span(evidence, anchors, min_support, last, extra))
    }

    /// [`Claim::span`] among the spans of `extra + 1` sentences.
    fn best_span(
        &self,
        evidence: &Evidence,
        anchors: &[Vec<usize>],
        min_support: f32,
        last: usize,
        extra: usize,
    ) -> Option<Support> {
        let mut best: Option<(f32, usize, usize)> = None;
        for from in 1..=last {
            let to = from + extra;
            if to > last {
                break;
            }
            if !anchors.iter().all(|bound| bound.iter().any(|&a| (from..=to).contains(&a))) {
                continue;
            }
            let stems: HashSet<&String> =
                evidence.sentences[from..=to].iter().flatten().filter_map(|t| t.stem.as_ref()).collect();
            let held: Vec<&String> = self
                .words
                .iter()
                .map(|(stem, _)| stem)
                .filter(|stem| stems.contains(stem) || evidence.topic.contains(*stem))
                .collect();
            if share(held.len(), self.words.len()) < min_support {
                continue;
            }
            // Words it adds to the question that the passage says only
            // elsewhere (and says rarely): when they are a good part of what
            // it says, the claim joins this span to another part of the
            // passage, which no quote shows.
            let elsewhere = self
                .words
                .iter()
                .filter(|(stem, _)| {
                    !stems.contains(stem)
                        && !self.asked.contains(stem)
                        && !evidence.sentences[0].iter().any(|t| t.stem.as_ref() == Some(stem))
                        && evidence.spread.get(stem).is_some_and(|&n| 2 * n < evidence.sentences.len())
                })
                .count();
            if share(elsewhere, self.words.len()) >= ELSEWHERE_SHARE {
                continue;
            }
            // Words the span itself says (not only its title).
            let said: f32 =
                held.iter().filter(|stem| stems.contains(*stem)).map(|stem| evidence.weight(stem)).sum();
            if said <= 0.0 && anchors.is_empty() {
                continue;
            }
            if best.is_none_or(|(top, _, _)| said > top) {
                best = Some((said, from, to));
            }
        }
        let (_, from, to) = best?;
        evidence.quote(from, to, self)
    }

    /// The character ranges of `quote` that say one of the claim's words or
    /// facts.
    fn marks(&self, quote: &str) -> Vec<[usize; 2]> {
        let stems: HashSet<&str> = self.words.iter().map(|(stem, _)| stem.as_str()).collect();
        let mut marks = Vec::new();
        for chunk in quote.split_whitespace() {
            let word = trim_word(chunk);
            if word.is_empty() {
                continue;
            }
            // An identifier is marked when it is one of the facts, not for
            // the words it is made of (`SQLITE_MAX_ATTACHED` for "attached").
            let identifier = is_identifier(word);
            let says = tokens(word).iter().any(|token| {
                (!identifier && token.stem.as_deref().is_some_and(|stem| stems.contains(stem)))
                    || self.facts.iter().any(|fact| fact.is_in(token))
            });
            if says {
                let at = offset_in(quote, word);
                let start = quote[..at].chars().count();
                marks.push([start, start + word.chars().count()]);
            }
        }
        marks
    }

    /// The best weighted share of the subject near an occurrence of `fact`,
    /// and the sentence of that occurrence (`None`: the passage never states
    /// it). A name in the title or heading is bound to all of the passage.
    fn binding(&self, fact: &Fact, evidence: &Evidence) -> Option<(f32, usize)> {
        if matches!(fact, Fact::Name(name) if evidence.topic_names.contains(name)) {
            return Some((1.0, 0));
        }
        let mut best: Option<(f32, usize)> = None;
        for (coverage, i) in self.occurrences(fact, evidence) {
            if best.is_none_or(|(top, _)| coverage > top) {
                best = Some((coverage, i));
            }
        }
        best
    }

    /// Each occurrence of `fact` in the passage, in order: the weighted
    /// share of the subject near it, and its sentence.
    fn occurrences(&self, fact: &Fact, evidence: &Evidence) -> Vec<(f32, usize)> {
        let own = fact_words(fact);
        let subject: Vec<&(String, String)> =
            self.subject.iter().filter(|(stem, word)| !own.contains(stem) && !own.contains(word)).collect();
        let total: f32 = subject.iter().map(|(stem, _)| evidence.weight(stem)).sum();
        let mut found_at = Vec::new();
        for (i, sentence) in evidence.sentences.iter().enumerate() {
            for (at, token) in sentence.iter().enumerate() {
                if !fact.is_in(token) {
                    continue;
                }
                let near: HashSet<&String> = if i == 0 {
                    sentence.iter().filter_map(|t| t.stem.as_ref()).collect()
                } else {
                    evidence.near(i, at).into_iter().filter_map(|t| t.stem.as_ref()).collect()
                };
                let found: f32 = subject
                    .iter()
                    .filter(|(stem, _)| near.contains(stem) || evidence.topic.contains(stem))
                    .map(|(stem, _)| evidence.weight(stem))
                    .sum();
                let coverage = if total > 0.0 { found / total } else { 1.0 };
                found_at.push((coverage, i));
            }
        }
        found_at
    }

    /// Every sentence of the text in which `fact` is bound to the subject
    /// (the weighted share `min_support` of it near the fact).
    fn bound_sentences(&self, fact: &Fact, evidence: &Evidence, min_support: f32) -> Vec<usize> {
        let mut bound: Vec<usize> = self
            .occurrences(fact, evidence)
            .into_iter()
            .filter(|&(coverage, i)| i > 0 && coverage >= min_support)
            .map(|(_, i)| i)
            .collect();
        bound.dedup();
        bound
    }

    /// The sentence of the passage's text that best matches the claim,
    /// weighing each word by how specific it is.
    fn anchor(&self, evidence: &Evidence) -> Option<usize> {
        let mut best = None::<(usize, f32)>;
        for i in 1..evidence.sentences.len() {
            let score = self.weighed_in(evidence, i);
            if score > 0.0 && best.is_none_or(|(_, top)| score > top) {
                best = Some((i, score));
            }
        }
        best.map(|(i, _)| i)
    }

    /// How much of the claim sentence `i` of `evidence` says: the weights of
    /// its words found there.
    fn weighed_in(&self, evidence: &Evidence, i: usize) -> f32 {
        let stems: HashSet<&String> = evidence.sentences[i].iter().filter_map(|t| t.stem.as_ref()).collect();
        self.words
            .iter()
            .filter(|(stem, _)| stems.contains(stem))
            .map(|(stem, _)| evidence.weight(stem))
            .sum()
    }
}

/// The spans of the candidate passages that may say `claim` in other words
/// (see [`Claim::rephrased_spans`]), the best [`MAX_REPHRASINGS`] of all.
fn rephrasings(
    claim: &Claim,
    evidence: &[Evidence],
    candidates: &[usize],
    min_support: f32,
) -> Vec<Rephrasing> {
    let mut spans: Vec<(f32, usize, usize, usize)> = candidates
        .iter()
        .flat_map(|&n| {
            claim
                .rephrased_spans(&evidence[n - 1], min_support)
                .into_iter()
                .map(move |(said, from, to)| (said, n, from, to))
        })
        .collect();
    spans.sort_by(|a, b| b.0.total_cmp(&a.0));
    spans
        .into_iter()
        .take(MAX_REPHRASINGS)
        .filter_map(|(_, n, from, to)| {
            Some(Rephrasing { passage: n, support: evidence[n - 1].quote(from, to, claim)? })
        })
        .collect()
}

/// The words a fact is written with (an identifier's parts too), which do
/// not count as its subject.
fn fact_words(fact: &Fact) -> HashSet<String> {
    let mut words = HashSet::new();
    if let Fact::Name(name) = fact {
        words.insert(name.clone());
        for part in name.split(|c: char| !c.is_alphanumeric()).filter(|p| !p.is_empty()) {
            words.insert(part.to_owned());
            words.insert(stem(part));
        }
        words.insert(stem(name));
    }
    words
}

fn share(found: usize, of: usize) -> f32 {
    if of == 0 {
        1.0
    } else {
        found as f32 / of as f32
    }
}

/// The tokens of a text: words, numbers, names, identifiers and negations.
/// Stop words stay as empty tokens, so that distances count every word.
fn tokens(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut sentence_start = true;
    for chunk in text.split_whitespace() {
        let word = trim_word(chunk);
        let opens = sentence_start;
        sentence_start = chunk.ends_with(['.', '!', '?', ':']);
        if word.is_empty() {
            continue;
        }
        if is_identifier(word) {
            out.push(Token { lower: word.to_lowercase(), name: true, strong_name: true, ..Token::default() });
            // Its parts are words its subject may share ("attached" of
            // SQLITE_MAX_ATTACHED), not facts of their own.
            for part in word.split(|c: char| !c.is_alphanumeric()).filter(|p| !p.is_empty()) {
                let words = plain_tokens(part, false).into_iter().filter(|t| t.number.is_none());
                out.extend(words.map(|t| Token { name: false, strong_name: false, ..t }));
            }
            continue;
        }
        if let Some(n) = compound_number(&word.to_lowercase()) {
            out.push(Token { lower: word.to_lowercase(), number: Some(n.to_string()), ..Token::default() });
            continue;
        }
        out.extend(plain_tokens(word, opens));
    }
    out
}

/// Punctuation around a word: quotes, brackets, commas, and at its end a
/// full stop too (`"sqlite_sequence".` is `sqlite_sequence`). A call's
/// `()` stays: `sqlite3_limit().` is `sqlite3_limit()`.
fn trim_word(chunk: &str) -> &str {
    const AROUND: &str = "\"'`\u{201c}\u{201d}\u{2018}\u{2019}()[]{}<>,;:!?*";
    let mut word = chunk.trim_start_matches(|c: char| AROUND.contains(c));
    while !word.ends_with("()") {
        match word.chars().next_back() {
            Some(c) if c == '.' || AROUND.contains(c) => word = &word[..word.len() - c.len_utf8()],
            _ => break,
        }
    }
    word
}

/// Tokens of a word that is not an identifier: runs of letters and of
/// digits ("10%" is 10, "2MB" is 2 and "mb").
fn plain_tokens(word: &str, opens_sentence: bool) -> Vec<Token> {
    let mut out = Vec::new();
    let chars: Vec<char> = word.chars().collect();
    let mut i = 0;
    let mut first = opens_sentence;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_digit() {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_digit()
                    || (matches!(chars[i], '.' | ',') && chars.get(i + 1).is_some_and(char::is_ascii_digit)))
            {
                i += 1;
            }
            let raw: String = chars[start..i].iter().collect();
            out.push(Token { lower: raw.clone(), number: Some(normalise_number(&raw)), ..Token::default() });
        } else if c.is_alphabetic() {
            let start = i;
            while i < chars.len() && (chars[i].is_alphabetic() || matches!(chars[i], '\'' | '\u{2019}')) {
                i += 1;
            }
            let raw: String = chars[start..i].iter().collect();
            out.push(word_token(&raw, first));
            first = false;
        } else {
            i += 1;
        }
    }
    out
}

fn word_token(raw: &str, opens_sentence: bool) -> Token {
    let lower = raw.to_lowercase().replace('\u{2019}', "'");
    if NEGATIONS.contains(&lower.as_str()) || lower.ends_with("n't") {
        return Token { lower, negation: true, ..Token::default() };
    }
    let lower = lower.strip_suffix("'s").unwrap_or(&lower).trim_matches('\'').to_owned();
    if let Some(&(_, n)) = NUMBER_WORDS.iter().find(|(w, _)| *w == lower) {
        return Token { lower, number: Some(n.to_string()), ..Token::default() };
    }
    if lower.chars().count() < 3 || STOP_WORDS.contains(&lower.as_str()) {
        return Token { lower, ..Token::default() };
    }
    let mut letters = raw.chars();
    let initial = letters.next().is_some_and(char::is_uppercase);
    let inner = letters.any(char::is_uppercase);
    Token {
        stem: Some(stem(&lower)),
        name: inner || (initial && !opens_sentence),
        strong_name: inner,
        lower,
        ..Token::default()
    }
}

/// Whether a word is an identifier: `snake_case`, `a.b`, `a/b`, `a::b`,
/// `f()`, `--flag`, `camelCase`, or letters then digits (`utf8`, `x86_64`).
fn is_identifier(word: &str) -> bool {
    let has_letter = word.chars().any(char::is_alphabetic);
    if !has_letter {
        return false;
    }
    let inner = |sep: char| {
        let chars: Vec<char> = word.chars().collect();
        chars.windows(3).any(|w| {
            w[1] == sep
                && w[0].is_alphanumeric()
                && w[2].is_alphanumeric()
                && (w[0].is_alphabetic() || w[2].is_alphabetic())
        })
    };
    let letters_then_digits = {
        let first_digit = word.find(|c: char| c.is_ascii_digit());
        first_digit.is_some_and(|at| at > 0 && word[..at].chars().all(char::is_alphabetic))
    };
    let camel = {
        let mut chars = word.chars();
        chars.next().is_some_and(char::is_lowercase) && chars.any(char::is_uppercase)
    };
    word.contains('_')
        || word.contains("::")
        || word.ends_with("()")
        || (word.starts_with("--") && word.len() > 3)
        || (word.chars().count() >= 4 && (inner('.') || inner('/')))
        || letters_then_digits
        || camel
}

/// "twenty-five" as 25.
fn compound_number(word: &str) -> Option<u64> {
    let (tens, unit) = word.split_once('-')?;
    let tens = NUMBER_WORDS.iter().find(|(w, n)| *w == tens && (20..=90).contains(n))?.1;
    let unit = NUMBER_WORDS.iter().find(|(w, n)| *w == unit && (1..=9).contains(n))?.1;
    Some(tens + unit)
}

/// "1,073,741,823" as 1073741823; "3.5" and "3,5" as 3.5.
fn normalise_number(raw: &str) -> String {
    let groups: Vec<&str> = raw.split(',').collect();
    let thousands =
        groups.len() > 1 && groups[1..].iter().all(|g| g.split('.').next().is_some_and(|d| d.len() == 3));
    if thousands {
        groups.concat()
    } else {
        raw.replace(',', ".")
    }
}

/// A crude stem: one ending dropped ("-ing", "-ed", "-es", "-s", "-e",
/// leaving three letters or more), then the first six letters, so that
/// "limited" meets "limits" and "calibrating" meets "calibration".
fn stem(word: &str) -> String {
    let root = ["ing", "ed", "es", "s", "e"]
        .iter()
        .find_map(|suffix| {
            let root = word.strip_suffix(suffix)?;
            let keeps = root.chars().count() >= 3 && !(*suffix == "s" && root.ends_with('s'));
            keeps.then_some(root)
        })
        .unwrap_or(word);
    root.chars().take(6).collect()
}

fn shorten(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let cut: String = text.chars().take(max).collect();
        format!("{cut}\u{2026}")
    }
}

/// The first `max` items, and how many more there are.
fn list_some(items: &[String], max: usize) -> String {
    if items.len() <= max {
        return list(items);
    }
    format!("{} and {} more", items[..max].join(", "), items.len() - max)
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "nothing".to_owned()
    } else {
        items.join(", ")
    }
}

/// Where `part`, a slice of `text`, starts in it, in bytes.
fn offset_in(text: &str, part: &str) -> usize {
    (part.as_ptr() as usize).saturating_sub(text.as_ptr() as usize).min(text.len())
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

    fn passages() -> Vec<Passage> {
        vec![
            Passage::plain(
                "To restore a snapshot, stop Lore, copy the snapshot over the data directory and start it again.",
            ),
            Passage::plain("Calibrating instrument 17 takes forty minutes and needs the blue reference weight."),
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

    /// A small model that loops: the trace's reason stays readable (the
    /// statement told once, with its count; the rest counted), and the
    /// detail lists each distinct statement once.
    #[test]
    fn a_looping_answer_gets_a_bounded_reason_and_a_complete_detail() {
        let question = "How do I back up the database?";
        let mut looping = String::new();
        for n in 1..=16 {
            looping.push_str(&format!("{n}. Copy the snapshot over the data directory [1].\n"));
        }
        for n in 0..12 {
            looping.push_str(&format!("The frobnicator {n} needs calibration weight number {}.\n", 40 + n));
        }
        let verdict = check(question, &looping, &passages(), 0.5);
        assert!(!verdict.grounded);
        assert_eq!(verdict.looping, Some(16));
        assert!(verdict.reason.chars().count() <= REASON_CHARS + 1, "{}", verdict.reason);
        assert_eq!(
            verdict.reason.matches("Copy the snapshot").count(),
            0,
            "unsupported statements come first"
        );
        assert!(verdict.reason.contains("and 9 more statements"), "{}", verdict.reason);
        assert!(verdict.reason.lines().count() <= REASON_STATEMENTS + 2, "{}", verdict.reason);
        // The detail: every distinct statement once, the repeated one with its count.
        assert_eq!(verdict.detail.matches("Copy the snapshot").count(), 1, "{}", verdict.detail);
        assert!(verdict.detail.contains("(the same statement 16 times)"), "{}", verdict.detail);
        assert_eq!(verdict.detail.lines().count(), 1 + 1 + 12, "{}", verdict.detail);
    }

    #[test]
    fn pleasantries_make_no_claim() {
        let verdict = check("Hello?", "Sure! Happy to help.", &passages(), 0.5);
        assert!(!verdict.grounded);
        assert_eq!(verdict.claims, 0);
        assert_eq!(citation_markers("see [1, 2] and [x] and [3]"), vec![1, 2, 3]);
        assert_eq!(strip_markers("a [1] b [x]"), "a  b [x]");
    }

    /// Two passages of SQLite's own documentation (`limits.html`, as
    /// Debian's sqlite3-doc installs it), as Lore's chunker cuts them.
    fn sqlite_limits() -> Vec<Passage> {
        vec![
            Passage::new(
                "Limits In SQLite Maximum Number Of Attached Databases",
                "The ATTACH statement is an SQLite extension that allows two or more databases to be associated \
                 to the same database connection and to operate as if they were a single database. The number of \
                 simultaneously attached databases is limited to SQLITE_MAX_ATTACHED which is set to 10 by \
                 default. The maximum number of attached databases cannot be increased above 125. The maximum \
                 number of attached databases can be lowered at run-time using the sqlite3_limit(db, \
                 SQLITE_LIMIT_ATTACHED, size) interface.",
            ),
            Passage::new(
                "Limits In SQLite Maximum Number Of Pages In A Database File",
                "SQLite is able to limit the size of a database file to prevent the database file from growing \
                 too large and consuming too much disk space. The SQLITE_MAX_PAGE_COUNT parameter, which is \
                 normally set to 1073741823, is the maximum number of pages allowed in a single database file. \
                 The largest possible setting for SQLITE_MAX_PAGE_COUNT is 4294967294. When used with the maximum \
                 page size of 65536, this gives a maximum SQLite database size of about 281 terabytes. \
                 Maximum Number Of Rows In A Table. The theoretical maximum number of rows in a table is 2 64 \
                 (18446744073709551616 or about 1.8e+19). This limit is unreachable since the maximum database \
                 size of 281 terabytes will be reached first.",
            ),
        ]
    }

    #[test]
    fn facts_are_judged_against_the_sentence_that_states_them() {
        let passages = sqlite_limits();
        let question = "What is the maximum number of attached databases?";
        // (answer, supported?, why)
        let cases = [
            ("The maximum number of attached databases is 10 by default [1].", true, "the passage's fact"),
            (
                "By default, at most ten databases can be attached at once [1].",
                true,
                "a paraphrase, in words",
            ),
            ("The attached database limit cannot be raised above 125 [1].", true, "a negated fact, negated"),
            (
                "Attached databases are limited to SQLITE_MAX_ATTACHED, which is 10 by default [1].",
                true,
                "an identifier beside its subject",
            ),
            ("The maximum number of attached databases is 20 [1].", false, "a wrong number"),
            (
                "The maximum number of attached databases is 2 [2].",
                false,
                "a right number from an unrelated sentence",
            ),
            ("The maximum number of attached databases is 2.", false, "the same, uncited"),
            ("The maximum number of attached databases is 1073741823 [2].", false, "a number bound to pages"),
            ("PostgreSQL limits the number of attached databases to 10 [1].", false, "a wrong name"),
            (
                "The number of attached databases is limited by SQLITE_MAX_PAGE_COUNT [1, 2].",
                false,
                "an identifier of another limit",
            ),
            (
                "The maximum number of attached databases can be increased above 125 [1].",
                false,
                "a flipped negation",
            ),
            (
                "The number of attached databases is not limited by SQLITE_MAX_ATTACHED [1].",
                false,
                "a negation added",
            ),
        ];
        let mut wrong = Vec::new();
        for (answer, supported, why) in cases {
            let verdict = check(question, answer, &passages, 0.5);
            if verdict.grounded != supported {
                wrong.push(format!("{why}: {answer}\n{}", verdict.reason));
            }
        }
        assert!(wrong.is_empty(), "misjudged:\n{}", wrong.join("\n\n"));
    }

    /// The span a statement is quoted with, checked against its passage:
    /// the quote is the passage's text at the offsets, and holds its facts.
    fn quoted(question: &str, answer: &str, passages: &[Passage]) -> Option<Support> {
        let verdict = check(question, answer, passages, 0.5);
        let judged = verdict.judged.first()?;
        let support = judged.support.clone();
        assert_eq!(
            support.is_some(),
            judged.supported,
            "a statement is supported exactly when it has a span"
        );
        if let Some(support) = &support {
            let passage = &passages[judged.passage? - 1].text;
            let at: String = passage.chars().skip(support.start).take(support.end - support.start).collect();
            assert_eq!(at, support.quote, "the offsets point at the quote");
            let chars: Vec<char> = support.quote.chars().collect();
            for [start, end] in &support.marks {
                assert!(start < end && *end <= chars.len(), "{:?} in {:?}", support.marks, support.quote);
            }
        }
        support
    }

    #[test]
    fn each_statement_is_quoted_with_the_sentence_that_says_it() {
        let limits = sqlite_limits();
        let vacuum = sqlite_vacuum();
        let attached = "What is the maximum number of attached databases?";
        // (question, answer, passages, the quote, or None: no span, not served)
        let cases: [(&str, &str, &[Passage], Option<&str>); 9] = [
            (
                attached,
                "The maximum number of attached databases is 10 by default [1].",
                &limits,
                Some("The number of simultaneously attached databases is limited to SQLITE_MAX_ATTACHED which is set to 10 by default."),
            ),
            (
                attached,
                "By default, at most ten databases can be attached at once [1].",
                &limits,
                Some("The number of simultaneously attached databases is limited to SQLITE_MAX_ATTACHED which is set to 10 by default."),
            ),
            (
                attached,
                "The attached database limit cannot be raised above 125 [1].",
                &limits,
                Some("The maximum number of attached databases cannot be increased above 125."),
            ),
            (
                "How large can an SQLite database get?",
                "With the maximum page size of 65536, an SQLite database can reach about 281 terabytes [2].",
                &limits,
                Some("When used with the maximum page size of 65536, this gives a maximum SQLite database size of about 281 terabytes."),
            ),
            (
                "Which pragma is an alternative to running VACUUM to erase deleted content?",
                "Setting PRAGMA secure_delete=ON is the alternative [2].",
                &vacuum,
                Some("Using VACUUM in this way is an alternative to setting PRAGMA secure_delete=ON ."),
            ),
            // A wrong number, a flipped negation, a fact from another sentence.
            (attached, "The maximum number of attached databases is 20 by default [1].", &limits, None),
            (attached, "The maximum number of attached databases can be increased above 125 [1].", &limits, None),
            (attached, "SQLITE_MAX_ATTACHED can be lowered at run-time to 10 [1].", &limits, None),
            (
                "How large can an SQLite database get?",
                "An SQLite database can hold 1073741823 pages of 65536 bytes [2].",
                &limits,
                None,
            ),
        ];
        let mut wrong = Vec::new();
        // Words of sentences 1 and 3, true of each, but no one or two
        // sentences say it: nothing to quote, not served.
        let nightly = [Passage::plain(
            "Backups run every night at 2 am. The archive is written to the bucket named nightly-dumps. \
             Old archives are deleted after a month. Restores take about ten minutes.",
        )];
        let joined = "Backups run every night and old archives are deleted [1].";
        if let Some(support) = quoted("What happens to backups?", joined, &nightly) {
            wrong.push(format!("{joined}\n  quoted {:?}\n  wanted None", support.quote));
        }
        let single = "Old archives are deleted after a month [1].";
        if quoted("What happens to old backups?", single, &nightly).map(|s| s.quote).as_deref()
            != Some("Old archives are deleted after a month.")
        {
            wrong.push(format!("{single}: not quoted with its own sentence"));
        }
        for (question, answer, passages, want) in cases {
            let got = quoted(question, answer, passages);
            if got.as_ref().map(|s| s.quote.as_str()) != want {
                let why = check(question, answer, passages, 0.5).detail;
                wrong.push(format!(
                    "{answer}\n  quoted {:?}\n  wanted {want:?}\n  {why}",
                    got.map(|s| s.quote)
                ));
            }
        }
        assert!(wrong.is_empty(), "misquoted:\n{}", wrong.join("\n"));
    }

    #[test]
    fn a_quote_marks_the_statement_s_words_and_facts() {
        let support = quoted(
            "What is the maximum number of attached databases?",
            "The maximum number of attached databases is 10 by default [1].",
            &sqlite_limits(),
        )
        .expect("supported");
        let chars: Vec<char> = support.quote.chars().collect();
        let marked: Vec<String> =
            support.marks.iter().map(|[start, end]| chars[*start..*end].iter().collect()).collect();
        for word in ["number", "attached", "databases", "10", "default"] {
            assert!(marked.iter().any(|m| m == word), "{word} is marked: {marked:?}");
        }
        assert!(!marked.iter().any(|m| m == "SQLITE_MAX_ATTACHED" || m == "simultaneously"), "{marked:?}");
    }

    #[test]
    fn a_refusal_shows_the_sentence_closest_to_the_question() {
        let limits = sqlite_limits();
        let closest = closest_sentence("How many rows can a table hold?", &limits[1]).expect("a sentence");
        assert_eq!(
            closest.quote,
            "The theoretical maximum number of rows in a table is 2 64 (18446744073709551616 or about 1.8e+19)."
        );
        let text: String =
            limits[1].text.chars().skip(closest.start).take(closest.end - closest.start).collect();
        assert_eq!(text, closest.quote);
        // Nothing in common: the passage's first sentence.
        let first = closest_sentence("Who wrote it?", &limits[0]).expect("a sentence");
        assert!(first.quote.starts_with("The ATTACH statement") && first.start == 0, "{first:?}");
    }

    #[test]
    fn quote_first_serves_the_sentences_the_reply_copies_verbatim() {
        let limits = sqlite_limits();
        let question = "What is the maximum number of attached databases?";
        // A copy in the model's words still chooses the passage's sentence,
        // which is served as the passage says it, marker before its stop.
        let quoted = quote(
            question,
            "Sure! The number of attached databases is limited to 10 by default [1].",
            &limits,
            0.5,
        );
        assert_eq!(
            quoted.text,
            "The number of simultaneously attached databases is limited to SQLITE_MAX_ATTACHED which is set to 10 by default [1]."
        );
        assert_eq!((quoted.sentences, quoted.altered.len()), (1, 0));
        assert!(check(question, &quoted.text, &limits, 0.5).grounded, "what is quoted passes the check");
        // Two sentences copied, one twice, and chatter that copies nothing.
        let quoted = quote(
            question,
            "SQLITE_MAX_ATTACHED is set to 10 by default.\nIt cannot be increased above 125 [1].\nSQLITE_MAX_ATTACHED is set to 10 by default.\nI hope this helps you with your project today.",
            &limits,
            0.5,
        );
        assert_eq!(quoted.sentences, 2, "{quoted:?}");
        assert!(quoted
            .text
            .ends_with("The maximum number of attached databases cannot be increased above 125 [1]."));
        assert_eq!(quoted.uncopied, vec!["I hope this helps you with your project today.".to_owned()]);
        for sentence in sentences(&quoted.text) {
            let plain = strip_markers(sentence);
            let plain = plain.trim().trim_end_matches('.').trim_end();
            assert!(limits[0].text.contains(plain), "{plain:?} is the passage's own");
        }
    }

    #[test]
    fn quote_first_serves_the_sentence_stating_the_figure_a_reply_gives() {
        // SmolLM2 mostly restates the question around a figure: the figure
        // chooses the sentence, among those saying the question's words.
        let limits = sqlite_limits();
        let question = "What is the maximum number of attached databases?";
        let chosen = |reply: &str| quote(question, reply, &limits, 0.5);
        let ten = chosen("The maximum number of attached databases is 10.");
        assert_eq!(
            ten.text,
            "The number of simultaneously attached databases is limited to SQLITE_MAX_ATTACHED which is set to 10 by default [1]."
        );
        let most = chosen("The maximum number of attached databases is 125.");
        assert_eq!(most.text, "The maximum number of attached databases cannot be increased above 125 [1].");
        // A figure no sentence of its words states is an improved copy.
        let invented = chosen("The maximum number of attached databases is 64.");
        assert_eq!((invented.sentences, invented.altered.len()), (0, 1), "{invented:?}");
        // A bare figure is matched by the question's words.
        let bare = chosen("The answer is: 125");
        assert_eq!(bare.text, most.text);
        // The question alone states nothing.
        let restated = chosen("The maximum number of attached databases.");
        assert_eq!((restated.sentences, restated.uncopied.len()), (0, 0), "{restated:?}");
    }

    #[test]
    fn a_small_model_reads_the_sentences_closest_to_the_question_and_their_continuations() {
        let passage = Passage::new(
            "Limits",
            "SQLite has many limits. The default page size is 4096 bytes. This value can be changed at \
             compile time. Cats are not related to databases at all. The maximum page size is 65536 bytes.",
        );
        let question = "What is the default page size?";
        assert_eq!(
            quotable(question, &passage, 1),
            "… The default page size is 4096 bytes. This value can be changed at compile time. …"
        );
        assert_eq!(
            quotable(question, &passage, 2),
            "… The default page size is 4096 bytes. This value can be changed at compile time. … The maximum \
             page size is 65536 bytes."
        );
        // Every sentence saying the question's words, and nothing else.
        assert_eq!(quotable("Which limits does SQLite have?", &passage, 10), "SQLite has many limits. …");
        assert_eq!(quotable("Where do penguins live?", &passage, 4), "");
    }

    #[test]
    fn a_reply_that_improves_a_copied_sentence_with_an_invented_fact_is_not_served() {
        let limits = sqlite_limits();
        let question = "What is the maximum number of attached databases?";
        for improved in [
            "The number of simultaneously attached databases is limited to SQLITE_MAX_ATTACHED which is set to 12 by default [1].",
            "The maximum number of attached databases cannot be increased above 125, or 250 with SQLITE_ENABLE_ATTACH [1].",
        ] {
            let quoted = quote(question, improved, &limits, 0.5);
            assert_eq!((quoted.sentences, quoted.text.as_str()), (0, ""), "{improved}");
            assert_eq!(quoted.altered, vec![improved.to_owned()]);
            assert!(quoted.explain().contains("changes the facts"), "{}", quoted.explain());
        }
        // A faithful copy beside an altered one: only the faithful one is served.
        let steps = quote(
            question,
            "SQLITE_MAX_ATTACHED is set to 10 by default [1].\n2. It cannot be increased above 250 [1].",
            &limits,
            0.5,
        );
        assert_eq!((steps.sentences, steps.altered.len()), (1, 1), "{steps:?}");
        assert!(steps.text.ends_with("set to 10 by default [1]."), "{steps:?}");
        // A sentence of another guide, copied word for word.
        let guides = [
            Passage::new("Guide 2", "Guide number 2 explains backing up the database and restoring it."),
            Passage::new("Guide 5", "Guide number 5 explains rotating the keys of the cluster."),
        ];
        let other = quote(
            "What does guide 5 explain?",
            "Guide number 2 explains backing up the database [1].",
            &guides,
            0.5,
        );
        assert_eq!((other.sentences, other.uncopied.len()), (0, 1), "{other:?}");
        let right = quote(
            "What does guide 5 explain?",
            "Guide number 5 explains rotating the keys [2].",
            &guides,
            0.5,
        );
        assert_eq!(right.text, "Guide number 5 explains rotating the keys of the cluster [2].");
        // A sentence copied word for word that answers another question.
        let elsewhere = quote(
            "How do I back up the database?",
            "The theoretical maximum number of rows in a table is 2 64 (18446744073709551616 or about 1.8e+19) [2].",
            &limits,
            0.5,
        );
        assert_eq!((elsewhere.sentences, elsewhere.uncopied.len()), (0, 1), "{elsewhere:?}");
        // Nothing copied at all: nothing to serve.
        let nothing = quote(question, "Databases are great for storing your data safely.", &limits, 0.5);
        assert_eq!((nothing.sentences, nothing.uncopied.len()), (0, 1));
    }

    /// Two passages of SQLite's `lang_vacuum.html` (Debian's sqlite3-doc).
    fn sqlite_vacuum() -> Vec<Passage> {
        vec![
            Passage::new(
                "VACUUM 2.1. VACUUM with an INTO clause",
                "If the INTO clause is included, then the original database file is unchanged and a new database \
                 is created in a file named by the argument to the INTO clause. The new database will contain the \
                 same logical content as the original database, fully vacuumed. The VACUUM command with an INTO \
                 clause is an alternative to the backup API for generating backup copies of a live database. The \
                 advantage of using VACUUM INTO is that the resulting backup database is minimal in size and hence \
                 the amount of filesystem I/O may be reduced. Also, all deleted content is purged from the backup, \
                 leaving behind no forensic traces. On the other hand, the backup API uses fewer CPU cycles and can \
                 be executed incrementally. The filename in the INTO clause can be an arbitrary SQL expression that \
                 evaluates to a string. The file named by the INTO clause must not previously exist, or else it \
                 must be an empty file, or the VACUUM INTO command will fail with an error. The argument to INTO \
                 can be a URI filename if URI filenames are enabled. URL filenames are enabled if any of the \
                 following are true: The SQLite library was compiled with -DSQLITE_USE_URI=1 . The sqlite3_config \
                 ( SQLITE_CONFIG_URI ,1) interfaces was invoked at start-time.",
            ),
            Passage::new(
                "VACUUM 1. Syntax",
                "When content is deleted from an SQLite database, the content is not usually erased but rather the \
                 space used to hold the content is marked as being available for reuse. This can allow deleted \
                 content to be recovered by a hacker or by forensic analysis. Running VACUUM will clean the \
                 database of all traces of deleted content, thus preventing an adversary from recovering deleted \
                 content. Using VACUUM in this way is an alternative to setting PRAGMA secure_delete=ON .",
            ),
        ]
    }

    #[test]
    fn a_statement_that_answers_another_question_or_adds_nothing_is_unsupported() {
        // The wrong ones are SmolLM2's own replies, which `lore bench
        // quality` found served as grounded before. (Its reply "The answer
        // is: VACUUM with an INTO clause." to "Which compile-time option
        // enables URI filenames?" still passes: the passage relates VACUUM
        // INTO to URI filenames, and only a judge of meaning can tell.)
        let passages = sqlite_vacuum();
        // (question, answer, supported?, why)
        let cases = [
            (
                "Which compile-time option enables URI filenames?",
                "URI filenames are enabled when SQLite is compiled with -DSQLITE_USE_URI=1 [1].",
                true,
                "the right option",
            ),
            (
                "Which pragma is an alternative to running VACUUM to erase deleted content?",
                "The VACUUM command is an alternative to running VACUUM to erase deleted content.",
                false,
                "the question again, with an addition the passage never relates",
            ),
            (
                "Which pragma is an alternative to running VACUUM to erase deleted content?",
                "Setting PRAGMA secure_delete=ON is the alternative [2].",
                true,
                "the right pragma",
            ),
            (
                "Which Kubernetes operator deploys it?",
                "The operator that deploys it is the one that deploys it to the main database.",
                false,
                "the passages never name what the question names",
            ),
            (
                "What happens to the original database file with VACUUM INTO?",
                "The original database file is unchanged [1].",
                true,
                "the fact, in the question's words",
            ),
        ];
        let mut wrong = Vec::new();
        for (question, answer, supported, why) in cases {
            let verdict = check(question, answer, &passages, 0.5);
            if verdict.grounded != supported {
                wrong.push(format!("{why}: {answer}\n{}", verdict.reason));
            }
        }
        assert!(wrong.is_empty(), "misjudged:\n{}", wrong.join("\n\n"));
        let elsewhere = check(
            "Which Kubernetes operator deploys it?",
            "The operator that deploys it is the one that deploys it to the main database.",
            &passages,
            0.5,
        );
        assert!(
            elsewhere.reason.contains("\"kubernetes\", which the question names"),
            "{}",
            elsewhere.reason
        );
        let again = check(
            "Which pragma is an alternative to running VACUUM to erase deleted content?",
            "The VACUUM command is an alternative to running VACUUM to erase deleted content [2].",
            &passages,
            0.5,
        );
        assert!(again.reason.contains("nothing it adds to the question"), "{}", again.reason);
    }

    #[test]
    fn a_quoted_identifier_and_a_figure_of_a_continuing_sentence_are_bound() {
        // SQLite's `autoinc.html` and `limits.html`; the answers are
        // SmolLM2's own, which `lore bench quality` found refused before.
        let autoinc = Passage::new(
            "SQLite Autoincrement",
            "SQLite keeps track of the largest ROWID using an internal table named \"sqlite_sequence\". The \
             sqlite_sequence table is created and initialized automatically whenever a normal table that \
             contains an AUTOINCREMENT column is created.",
        );
        let verdict = check(
            "Which internal table keeps track of the largest ROWID for AUTOINCREMENT?",
            "The internal table named \"sqlite_sequence\" is used to keep track of the largest ROWID for AUTOINCREMENT [1].",
            &[autoinc],
            0.5,
        );
        assert!(verdict.grounded, "{}", verdict.reason);

        let length = Passage::new(
            "Limits In SQLite Maximum length of a string or BLOB",
            "The maximum number of bytes in a string or BLOB in SQLite is defined by the preprocessor macro \
             SQLITE_MAX_LENGTH. The default value of this macro is 1 billion (1 thousand million or \
             1,000,000,000).",
        );
        let question = "What is the default maximum length of a string or BLOB?";
        let right = check(
            question,
            "The default maximum length of a string or BLOB is 1,000,000,000 [1].",
            std::slice::from_ref(&length),
            0.5,
        );
        assert!(right.grounded, "{}", right.reason);
        let wrong = check(
            question,
            "The default maximum length of a string or BLOB is 2,000,000,000 [1].",
            &[length],
            0.5,
        );
        assert!(!wrong.grounded, "{}", wrong.reason);
        assert_eq!(trim_word("sqlite3_limit())."), "sqlite3_limit()");
        assert_eq!(trim_word("(\"sqlite_sequence\")."), "sqlite_sequence");
    }

    #[test]
    fn every_judgement_says_what_matched_and_what_did_not() {
        let verdict = check(
            "What is the maximum number of attached databases?",
            "The maximum number of attached databases is 2 [2].",
            &sqlite_limits(),
            0.5,
        );
        assert!(!verdict.grounded);
        let judged = &verdict.judged[0];
        assert_eq!(judged.passage, Some(2));
        assert!(judged.matched.contains(&"maximum".to_owned()), "{judged:?}");
        assert!(judged.missing.iter().any(|m| m.starts_with("2 (not near")), "{judged:?}");
        assert!(
            verdict.reason.contains(
                "unsupported \u{ab}The maximum number of attached databases is 2 [2].\u{bb} vs [2]"
            ),
            "{}",
            verdict.reason
        );

        let negated = check(
            "Can the limit be raised?",
            "The maximum number of attached databases can be increased above 125 [1].",
            &sqlite_limits(),
            0.5,
        );
        assert!(
            negated.reason.contains("the passage negates what the statement affirms"),
            "{}",
            negated.reason
        );
    }

    #[test]
    fn a_narrow_pass_is_offered_for_a_second_opinion_and_can_be_overruled() {
        let mut verdict = check(
            "What is the maximum number of attached databases?",
            "The number of simultaneously attached databases is limited to SQLITE_MAX_ATTACHED [1]. It is set to 10 by default [1].",
            &sqlite_limits(),
            0.5,
        );
        assert!(verdict.grounded, "{}", verdict.reason);
        assert!(verdict.narrow_passes(0.0).is_empty(), "nothing passes below the bar");
        let all = verdict.narrow_passes(1.0);
        assert_eq!(all.len(), 2, "every pass is narrower than the whole scale");
        verdict.judged[all[1]].overrule("the second opinion: no");
        verdict.settle();
        assert!(!verdict.grounded);
        assert_eq!(verdict.unsupported, vec!["It is set to 10 by default [1]."]);
        assert!(verdict.reason.contains("the second opinion: no"), "{}", verdict.reason);
    }

    #[test]
    fn numbers_names_and_identifiers_are_read_as_written() {
        let facts = |text: &str| -> Vec<String> {
            Claim::new(text, &[]).facts.iter().map(|f| f.shown().to_owned()).collect()
        };
        assert_eq!(facts("It holds 1,073,741,823 pages or forty-two rows."), vec!["1073741823", "42"]);
        assert_eq!(
            facts("Set max_page_count in config.toml with --port or sqlite3_limit()."),
            vec!["max_page_count", "config.toml", "--port", "sqlite3_limit()"]
        );
        assert_eq!(
            facts("Install PostgreSQL on Debian, then use SQLite."),
            vec!["postgresql", "debian", "sqlite"]
        );
        assert_eq!(facts("Sizes of 2MB, 1.8e+19 and 3.5 work."), vec!["2", "1.8", "19", "3.5"]);
        assert!(Claim::new("It doesn't work.", &[]).negated);
        assert!(Claim::new("It never stops.", &[]).negated);
        assert!(!Claim::new("Note that it works.", &[]).negated);
    }

    /// The paraphrase cases shared with the engine's test of them on the
    /// real embedding model (`engine/tests/engine/paraphrase.rs`).
    pub(crate) fn paraphrase_cases() -> (Vec<Passage>, Vec<serde_json::Value>) {
        let fixture: serde_json::Value =
            serde_json::from_str(include_str!("../tests/fixtures/paraphrases.json")).unwrap();
        let passages = fixture["passages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| Passage::new(p["context"].as_str().unwrap(), p["text"].as_str().unwrap()))
            .collect();
        (passages, fixture["cases"].as_array().unwrap().clone())
    }

    #[test]
    fn a_statement_refused_for_its_words_offers_the_spans_that_keep_its_facts() {
        let (passages, cases) = paraphrase_cases();
        let mut wrong = Vec::new();
        for case in &cases {
            let (question, answer) = (case["question"].as_str().unwrap(), case["answer"].as_str().unwrap());
            let verdict = check(question, answer, &passages, 0.5);
            assert!(!verdict.grounded, "its words alone pass: {answer}\n{}", verdict.reason);
            let offered = verdict.rephrasings();
            if let Some(expected) = case["offered"].as_bool() {
                if offered.is_empty() == expected {
                    wrong.push(format!("{}: {answer}\n{}", case["why"], verdict.detail));
                }
            }
            let claim = Claim::new(&plain_statement(answer), &tokens(question));
            for rephrasing in verdict.judged.iter().flat_map(|j| &j.rephrasings) {
                let passage = &passages[rephrasing.passage - 1];
                let quote = &rephrasing.support.quote;
                let at: String = passage
                    .text
                    .chars()
                    .skip(rephrasing.support.start)
                    .take(rephrasing.support.end - rephrasing.support.start)
                    .collect();
                assert_eq!(&at, quote, "the offsets point at the quote");
                let said = tokens(&format!("{} {quote}", passage.context));
                for fact in &claim.facts {
                    assert!(said.iter().any(|t| fact.is_in(t)), "{quote:?} lacks {}", fact.shown());
                }
            }
        }
        assert!(wrong.is_empty(), "misjudged:\n{}", wrong.join("\n\n"));
    }

    #[test]
    fn a_rephrasing_close_enough_in_meaning_supports_its_statement_and_says_so() {
        let (passages, _) = paraphrase_cases();
        let question = "What ROWID does the first row of an empty table get?";
        let answer = "The first row of an empty table gets a ROWID of 1.";
        let refused = check(question, answer, &passages, 0.5);
        let offered = refused.rephrasings();
        assert_eq!(offered.len(), 1, "{}", refused.detail);
        let (i, statement, quotes) = &offered[0];
        assert_eq!(statement, answer);
        assert!(quotes[0].contains("a ROWID of 1 is used"), "{quotes:?}");

        let mut close = refused.clone();
        close.weigh_rephrasings(&[(*i, vec![0.81; quotes.len()])], 0.7);
        assert!(close.grounded, "{}", close.reason);
        let judged = &close.judged[*i];
        assert!(
            (judged.margin - 0.11).abs() < 1e-4,
            "the margin is how far above the bar: {}",
            judged.margin
        );
        assert_eq!(judged.support.as_ref().map(|s| &s.quote), Some(&quotes[0]));
        assert_eq!(close.cited, vec![1]);
        assert!(close.reason.contains("said in other words"), "{}", close.reason);
        assert!(close.reason.contains("0.81 similar in meaning (at least 0.70)"), "{}", close.reason);
        assert!(close.rephrasings().is_empty(), "weighed once");
        assert_eq!(close.narrow_passes(0.2), vec![*i], "a narrow pass, for the second opinion");

        let mut far = refused.clone();
        far.weigh_rephrasings(&[(*i, vec![0.55; quotes.len()])], 0.7);
        assert!(!far.grounded);
        assert!(far.judged[*i].support.is_none());
        assert!(far.reason.contains("0.55 similar in meaning, below 0.70"), "{}", far.reason);
    }
}
