//! `engine::answer::gaps`: refused questions grouped by meaning.

use engine::answer::gaps::cluster;
use engine::metrics::QueryCount;

fn gap(query: &str, count: i64) -> QueryCount {
    QueryCount { query: query.to_owned(), count }
}

#[test]
fn questions_join_the_first_group_their_leader_resembles() {
    let gaps = [gap("a", 3), gap("b", 2), gap("c", 2), gap("d", 1)];
    // a and c point one way, b and d another.
    let vectors = [vec![1.0, 0.0], vec![0.0, 1.0], vec![0.9, 0.1], vec![0.1, 0.9]];
    let groups = cluster(&gaps, Some(&vectors), 0.75);
    assert_eq!(groups.len(), 2);
    assert_eq!((groups[0].label.as_str(), groups[0].count), ("a", 5));
    assert_eq!((groups[1].label.as_str(), groups[1].count), ("b", 3));
    assert_eq!(groups[1].questions, vec![gap("b", 2), gap("d", 1)]);
    // Without vectors every question is its own gap.
    assert_eq!(cluster(&gaps, None, 0.75).len(), 4);
}
