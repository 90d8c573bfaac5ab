//! Lore's own log, its latest lines kept in memory for the operation
//! `read_log`. The edge's log subscriber hands each line it writes here
//! ([`push`]) as well; the last [`KEPT`] lines are kept, older ones drop
//! off. Lines hold what the log holds, which never includes a secret.

use std::collections::VecDeque;
use std::sync::{Mutex, OnceLock};

use chrono::{DateTime, Utc};

/// How many lines are kept.
pub const KEPT: usize = 2000;

/// One line of the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub at: DateTime<Utc>,
    /// `ERROR`, `WARN`, `INFO`, `DEBUG` or `TRACE`.
    pub level: String,
    /// The module that logged it.
    pub target: String,
    /// The message and its fields, as the text log shows them.
    pub message: String,
}

fn lines() -> &'static Mutex<VecDeque<Line>> {
    static LINES: OnceLock<Mutex<VecDeque<Line>>> = OnceLock::new();
    LINES.get_or_init(|| Mutex::new(VecDeque::with_capacity(KEPT)))
}

/// Keeps a line (dropping the oldest beyond [`KEPT`]).
pub fn push(line: Line) {
    if let Ok(mut lines) = lines().lock() {
        if lines.len() == KEPT {
            lines.pop_front();
        }
        lines.push_back(line);
    }
}

/// How severe a level is (ERROR highest); unknown levels rank lowest.
fn severity(level: &str) -> u8 {
    match level.to_ascii_uppercase().as_str() {
        "ERROR" => 5,
        "WARN" => 4,
        "INFO" => 3,
        "DEBUG" => 2,
        "TRACE" => 1,
        _ => 0,
    }
}

/// The newest `limit` lines at `level` or more severe, newest first.
pub fn recent(limit: usize, level: Option<&str>) -> Vec<Line> {
    let floor = level.map(severity).unwrap_or(0);
    lines()
        .lock()
        .map(|lines| {
            lines.iter().rev().filter(|l| severity(&l.level) >= floor).take(limit).cloned().collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(level: &str, message: &str) -> Line {
        Line { at: Utc::now(), level: level.into(), target: "test".into(), message: message.into() }
    }

    #[test]
    fn the_newest_lines_come_first_filtered_by_level() {
        push(line("INFO", "first"));
        push(line("WARN", "second"));
        push(line("DEBUG", "third"));
        let all = recent(3, None);
        assert_eq!(all.iter().map(|l| l.message.as_str()).collect::<Vec<_>>(), ["third", "second", "first"]);
        let warnings = recent(10, Some("warn"));
        assert!(
            warnings.iter().all(|l| severity(&l.level) >= 4)
                && warnings.iter().any(|l| l.message == "second")
        );
        for i in 0..KEPT {
            push(line("INFO", &format!("n{i}")));
        }
        assert_eq!(recent(usize::MAX, None).len(), KEPT, "older lines drop off");
    }
}
