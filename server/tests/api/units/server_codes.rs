//! `lore_server::http::codes`: the table of stable error codes, and `docs/http.md`'s copy of it.

use std::collections::BTreeMap;

use lore_server::http::codes::{find, ALL, JOB_FAILED};

/// `(status, code)` of every row of the error table in `docs/http.md`.
fn documented() -> Vec<(u16, String)> {
    let page = include_str!("../../../../docs/http.md");
    let mut rows = Vec::new();
    for line in page.lines() {
        let cells: Vec<&str> = line.split(" | ").collect();
        let Some(status) = cells.first().and_then(|c| c.trim_start_matches("| ").parse::<u16>().ok()) else {
            continue;
        };
        let Some(codes) = cells.get(1) else { continue };
        for code in codes.split(", ") {
            rows.push((status, code.trim().trim_matches('`').to_owned()));
        }
    }
    rows
}

#[test]
fn each_code_is_listed_once_and_named_in_snake_case() {
    let mut seen = BTreeMap::new();
    for code in ALL {
        assert!(seen.insert(code.key, code.status).is_none(), "`{}` is listed twice", code.key);
        assert!(code.key.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{}", code.key);
        assert!(!code.meaning.is_empty(), "{}", code.key);
    }
    assert!(find(JOB_FAILED).is_none(), "the CLI's own code is not an HTTP code");
}

#[test]
fn the_documented_error_table_is_this_table() {
    let documented = documented();
    assert!(documented.len() >= 50, "the table in docs/http.md was not found: {documented:?}");
    for (status, key) in &documented {
        let code =
            find(key).unwrap_or_else(|| panic!("docs/http.md names `{key}`, which Lore does not have"));
        assert_eq!(code.status.as_u16(), *status, "docs/http.md lists `{key}` under {status}");
    }
    for code in ALL {
        assert!(
            documented.iter().any(|(_, key)| key == code.key),
            "`{}` is missing from the error table in docs/http.md",
            code.key
        );
    }
}
