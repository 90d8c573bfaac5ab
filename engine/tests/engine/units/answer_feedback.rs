//! `engine::answer::feedback`: a rating's comment, and who asked as stored.

use engine::answer::feedback::{comment, Asked, MAX_COMMENT_CHARS};
use engine::Error;

#[test]
fn comments_are_trimmed_and_bounded() {
    assert_eq!(comment(None).unwrap(), None);
    assert_eq!(comment(Some("  \n ")).unwrap(), None);
    assert_eq!(comment(Some(" wrong port ")).unwrap().as_deref(), Some("wrong port"));
    let longest = "é".repeat(MAX_COMMENT_CHARS);
    assert_eq!(comment(Some(&longest)).unwrap().as_deref(), Some(longest.as_str()));
    let err = comment(Some(&format!("{longest}x"))).unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "{err}");
    // Lines and tabs are text; NUL, escapes and bidirectional overrides
    // are not (and would show other text than was written).
    assert!(comment(Some("step 1\n\tstep 2\r\n")).is_ok());
    for odd in ["a\u{0}b", "a\u{1b}[31mred", "price \u{202e}001$", "x\u{2066}y"] {
        assert!(matches!(comment(Some(odd)), Err(Error::InvalidInput(_))), "{odd:?}");
    }
}

#[test]
fn askers_are_stored_apart() {
    let stored: Vec<String> =
        [Asked::Key("k1".into()), Asked::User("k1".into()), Asked::Admin("k1".into()), Asked::Terminal]
            .iter()
            .map(Asked::stored)
            .collect();
    let distinct: std::collections::BTreeSet<&String> = stored.iter().collect();
    assert_eq!(distinct.len(), stored.len(), "{stored:?}");
}
