//! `engine::keys`: the shape of a raw key, origins, and the per-node rate limiter.

use engine::keys::{hash, normalize_origin, random_key, RateLimiter, RANDOM_CHARS, SECRET_PREFIX};

#[test]
fn raw_keys_have_the_documented_shape() {
    let key = random_key(SECRET_PREFIX);
    assert!(key.starts_with("lore_sk_"));
    assert_eq!(key.len(), SECRET_PREFIX.len() + RANDOM_CHARS);
    assert!(key[SECRET_PREFIX.len()..].chars().all(|c| c.is_ascii_alphanumeric()));
    assert_ne!(random_key(SECRET_PREFIX), key);
    assert_eq!(hash(&key).len(), 64);
}

#[test]
fn origins_are_normalised_or_refused() {
    assert_eq!(normalize_origin("https://Docs.Example.com/").unwrap(), "https://docs.example.com");
    assert_eq!(normalize_origin("http://127.0.0.1:8080").unwrap(), "http://127.0.0.1:8080");
    assert!(normalize_origin("https://docs.example.com/page").is_err());
    assert!(normalize_origin("ftp://example.com").is_err());
    assert!(normalize_origin("example.com").is_err());
}

#[test]
fn the_rate_limiter_counts_per_key_and_minute() {
    let limiter = RateLimiter::default();
    assert!(limiter.allow("a", 2));
    assert!(limiter.allow("a", 2));
    assert!(!limiter.allow("a", 2));
    assert!(limiter.allow("b", 2));
}
