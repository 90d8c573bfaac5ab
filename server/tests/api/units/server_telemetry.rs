//! Tests of `lore_server::telemetry`, logging with `tracing`.

use lore_server::telemetry::colour;

#[test]
fn colour_only_on_a_terminal_and_without_no_color() {
    assert!(colour(true, None));
    assert!(!colour(false, None), "a file or a pipe gets plain text");
    assert!(!colour(true, Some("1".into())));
    assert!(!colour(false, Some("1".into())));
    // The convention: an empty NO_COLOR does not count.
    assert!(colour(true, Some("".into())));
}
