//! `engine::answer::verify`: how the second opinion reads a judge's reply.

use engine::answer::verify::yes_or_no;

#[test]
fn a_reply_is_read_by_its_first_word() {
    assert_eq!(yes_or_no("Yes."), Some(true));
    assert_eq!(yes_or_no(" no, it says 10"), Some(false));
    assert_eq!(yes_or_no("**No**"), Some(false));
    assert_eq!(yes_or_no("The passage says"), None);
    assert_eq!(yes_or_no(""), None);
}
