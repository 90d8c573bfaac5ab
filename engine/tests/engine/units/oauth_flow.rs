//! `engine::oauth::flow`: the S256 challenge and which redirect URIs a client may use.

use engine::oauth::flow::{check_redirect_uri, redirect_matches, s256};

#[test]
fn the_s256_challenge_is_rfc_7636s_example() {
    // RFC 7636, appendix B.
    assert_eq!(
        s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
        "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    );
}

#[test]
fn loopback_redirects_match_on_any_port_and_others_exactly() {
    let registered = vec!["http://127.0.0.1/callback".to_owned(), "https://app.example/cb".to_owned()];
    assert!(redirect_matches(&registered, "http://127.0.0.1:53117/callback"));
    assert!(!redirect_matches(&registered, "http://127.0.0.1:53117/other"));
    assert!(redirect_matches(&registered, "https://app.example/cb"));
    assert!(!redirect_matches(&registered, "https://app.example:8443/cb"));
    assert!(!redirect_matches(&registered, "https://app.example/cb?x=1"));
    assert!(check_redirect_uri("http://192.168.1.2/cb").is_err());
    assert!(check_redirect_uri("javascript:alert(1)").is_err());
    assert!(check_redirect_uri("https://app.example/cb#frag").is_err());
    assert!(check_redirect_uri("com.example.app:/oauth").is_ok());
}
