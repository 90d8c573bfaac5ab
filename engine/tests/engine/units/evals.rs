//! `engine::evals`: how a golden question's answer is scored, and when a candidate is worse.

use chrono::Utc;
use engine::answer::{Answer, CacheOutcome, CacheStatus, Citation, Trace, Usage};
use engine::evals::{regressions, score, Golden, Origin, Totals};

fn golden(facts: &[&str], refuse: bool, source: Option<&str>) -> Golden {
    Golden {
        id: "g".into(),
        question: "How many databases can be attached?".into(),
        expected_facts: facts.iter().map(|f| f.to_string()).collect(),
        should_refuse: refuse,
        expected_source: source.map(str::to_owned),
        origin: Origin::Prompt,
        created_by: "test".into(),
        created_at: Utc::now(),
        asked_as: None,
    }
}

fn answer(text: &str, refused: bool, sources: &[&str]) -> Answer {
    Answer {
        answer: text.into(),
        refused,
        grounded: !refused,
        pinned: false,
        citations: sources
            .iter()
            .enumerate()
            .map(|(i, s)| Citation {
                index: i + 1,
                chunk_id: format!("c{i}"),
                source_id: s.to_string(),
                document_id: "d".into(),
                title: "t".into(),
                url: None,
                snippet: String::new(),
                score: 0.5,
            })
            .collect(),
        statements: Vec::new(),
        related: Vec::new(),
        cache: CacheOutcome { status: CacheStatus::Bypass, kind: None, similarity: None },
        profile_version: 1,
        trace: Trace {
            id: String::new(),
            stages: Vec::new(),
            retrieval: Vec::new(),
            model: None,
            usage: Usage::default(),
        },
    }
}

#[test]
fn a_fact_counts_only_as_whole_words_case_and_quotes_aside() {
    let g = golden(&["10 databases", "SQLITE_MAX_ATTACHED"], false, None);
    let marked = score(&g, &answer("By default, 10 Databases; see `sqlite_max_attached`.", false, &[]), 1.0);
    assert!(marked.correct, "markdown and case aside: {marked:?}");
    let right = score(&g, &answer("By default 10 databases (SQLITE_MAX_ATTACHED).", false, &[]), 1.0);
    assert!(right.correct, "{right:?}");
    let wrong = score(&g, &answer("Up to 110 databases, per SQLITE_MAX_ATTACHED.", false, &[]), 1.0);
    assert!(!wrong.correct);
    assert_eq!(wrong.missing_facts, vec!["10 databases".to_owned()]);
}

#[test]
fn refusals_and_sources_are_scored() {
    let refuse = golden(&[], true, None);
    assert!(score(&refuse, &answer("I could not find this.", true, &[]), 1.0).correct);
    assert!(!score(&refuse, &answer("It is 10.", false, &[]), 1.0).correct);
    let sourced = golden(&["10"], false, Some("docs"));
    assert!(!score(&sourced, &answer("It is 10 [1].", false, &["blog"]), 1.0).correct);
    let both = score(&sourced, &answer("It is 10 [1].", false, &["blog", "docs"]), 1.0);
    assert!(both.correct && both.source_cited == Some(true));
    let refused = score(&sourced, &answer("I could not find this.", true, &[]), 1.0);
    assert!(!refused.correct && refused.refused);
    assert_eq!(Totals::of(&[refused]).wrongly_refused, 1);
}

#[test]
fn a_candidate_is_worse_when_it_answers_fewer_right_or_refuses_more() {
    let base = Totals { questions: 4, correct: 3, wrongly_refused: 1, ..Totals::default() };
    assert!(regressions(&base.clone(), &base, 2).is_empty());
    let fewer = Totals { correct: 2, ..base.clone() };
    assert_eq!(regressions(&fewer, &base, 2).len(), 1);
    let refusing = Totals { wrongly_refused: 2, ..base.clone() };
    assert!(regressions(&refusing, &base, 2)[0].contains("refuses 2"));
    let better = Totals { correct: 4, wrongly_refused: 0, ..base.clone() };
    assert!(regressions(&better, &base, 2).is_empty());
}
