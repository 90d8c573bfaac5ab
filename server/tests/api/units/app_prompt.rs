//! Tests of `app::pages::prompt`, the Prompt screen.

use app::pages::prompt::diff_lines;

#[test]
fn the_diff_marks_changed_lines_only() {
    let diff = diff_lines("a\nb\nc", "a\nB\nc\nd");
    assert_eq!(
        diff,
        vec![(' ', "a".into()), ('-', "b".into()), ('+', "B".into()), (' ', "c".into()), ('+', "d".into())]
    );
}
