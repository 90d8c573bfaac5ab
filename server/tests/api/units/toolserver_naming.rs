//! Tests of `lore_toolserver::naming`, the tool names of the application profile.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use lore_toolserver::naming::{names, Named, SUFFIX_LEN};

fn at(second: i64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(second, 0)
}

fn named(list: &[(&'static str, Option<&'static str>, i64)]) -> BTreeMap<String, String> {
    let resources: Vec<Named<'_>> = list
        .iter()
        .map(|(path, database, since)| Named { path, database: *database, since: at(*since) })
        .collect();
    names(&resources)
}

#[test]
fn slashes_and_dots_become_underscores() {
    let names = named(&[("dogs/puppies", Some("dev"), 1), ("v1.cats", Some("dev"), 1)]);
    assert_eq!(names["dogs/puppies"], "dogs_puppies");
    assert_eq!(names["v1.cats"], "v1_cats");
}

#[test]
fn the_senior_keeps_its_name_and_a_later_one_takes_the_database_then_a_suffix() {
    let names = named(&[
        ("a/b", Some("dev"), 1),
        ("a.b", Some("prod"), 2),
        ("a_b", Some("prod"), 3),
        ("c", Some("dev"), 1),
    ]);
    assert_eq!(names["a/b"], "a_b", "the first keeps its name");
    assert_eq!(names["a.b"], "prod_a_b", "the database prefix settles the second");
    let third = &names["a_b"];
    assert!(third.starts_with("prod_a_b_") && third.len() == "prod_a_b_".len() + SUFFIX_LEN, "{third}");
    assert_eq!(names["c"], "c", "no collision, no change");
    // The same resources give the same names, in any order.
    let again = named(&[
        ("c", Some("dev"), 1),
        ("a_b", Some("prod"), 3),
        ("a.b", Some("prod"), 2),
        ("a/b", Some("dev"), 1),
    ]);
    assert_eq!(names, again);
}

#[test]
fn a_later_export_of_a_taken_name_leaves_the_earlier_alone() {
    let before = named(&[("dogs_x", Some("dev"), 1)]);
    // The newcomer's path sorts first: seniority, not the path, decides.
    let after = named(&[("dogs_x", Some("dev"), 1), ("dogs/x", Some("prod"), 2)]);
    assert_eq!(before["dogs_x"], "dogs_x");
    assert_eq!(after["dogs_x"], "dogs_x", "get_dogs_x stays get_dogs_x");
    assert_eq!(after["dogs/x"], "prod_dogs_x");
    // Lore's own resources (no table) come before every table.
    let mixed = names(&[
        Named { path: "a/b", database: Some("dev"), since: at(0) },
        Named { path: "a_b", database: None, since: None },
    ]);
    assert_eq!(mixed["a_b"], "a_b", "a resource in Rust is the senior");
    assert_eq!(mixed["a/b"], "dev_a_b");
}
