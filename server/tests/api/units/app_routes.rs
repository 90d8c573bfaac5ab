//! Tests of `app::routes`, the admin API's routes.

use app::routes::{GOLDEN_ONE, PROFILE_RESTORE, ROLE, SOURCE, SOURCES, SOURCE_FILES};

#[test]
fn parameters_are_filled_in_order_and_encoded_as_one_segment() {
    assert_eq!(SOURCES.url(), "/admin/sources/");
    assert_eq!(SOURCE_FILES.at(["3f2a"]), "/admin/sources/3f2a/files");
    assert_eq!(ROLE.at(["generation"]), "/admin/roles/generation");
    assert_eq!(GOLDEN_ONE.at(["a/b c?"]), "/admin/golden/a%2Fb%20c%3F");
    assert_eq!(PROFILE_RESTORE.at(["12"]), "/admin/profile/versions/12/restore");
    assert_eq!(SOURCE.at(["café"]), "/admin/sources/caf%C3%A9");
}
