use harness::canary::{Side, guard_pattern};
use harness::consistency::{ConsistencyTracker, FailureKind, GuardSpec};

fn tracker() -> (ConsistencyTracker, Vec<Vec<u8>>) {
    let guards: Vec<GuardSpec> = [("o", Side::Before), ("o", Side::After)]
        .into_iter()
        .map(|(b, side)| GuardSpec {
            buffer: b.to_string(),
            side,
            expected: guard_pattern(9, b, side, 64),
        })
        .collect();
    let snapshots = guards.iter().map(|g| g.expected.clone()).collect();
    (ConsistencyTracker::new(guards), snapshots)
}

fn views(s: &[Vec<u8>]) -> Vec<&[u8]> {
    s.iter().map(Vec::as_slice).collect()
}

#[test]
fn identical_launches_pass() {
    let (mut t, snaps) = tracker();
    for i in 1..=5 {
        t.observe(i, &[1, 2, 3], &views(&snaps));
    }
    assert_eq!(
        (t.verified(), t.mismatched(), t.first_failure()),
        (5, 0, None)
    );
    assert!(t.corrupted().is_empty());
    assert_eq!(t.first_output(), Some(&[1u16, 2, 3][..]));
}

#[test]
fn the_first_differing_launch_is_named() {
    let (mut t, snaps) = tracker();
    t.observe(1, &[1, 2, 3], &views(&snaps));
    t.observe(2, &[1, 2, 3], &views(&snaps));
    t.observe(3, &[1, 9, 9], &views(&snaps));
    t.observe(4, &[1, 2, 4], &views(&snaps));
    assert_eq!(t.mismatched(), 2);
    assert_eq!(t.first_failure(), Some((3, FailureKind::Mismatch)));
    let m = t.first_mismatch().expect("detail");
    assert_eq!((m.launch, m.elements_differing, m.first_index), (3, 2, 1));
}

#[test]
fn a_changed_guard_wins_over_a_mismatch_at_the_same_launch() {
    let (mut t, mut snaps) = tracker();
    t.observe(1, &[1, 2], &views(&snaps));
    snaps[1][0] ^= 1;
    t.observe(2, &[7, 2], &views(&snaps));
    assert_eq!(t.first_failure(), Some((2, FailureKind::Canary)));
    assert_eq!(t.corrupted(), vec!["o.after".to_string()]);
    let (launch, c) = t.first_corruption().expect("corruption");
    assert_eq!((*launch, c.nearest_to_data), (2, 0));
    assert_eq!(FailureKind::Canary.name(), "canary");
}

#[test]
fn an_error_after_clean_launches_is_the_first_failure() {
    let (mut t, snaps) = tracker();
    t.observe(1, &[1], &views(&snaps));
    t.record_error(2);
    t.record_error(3);
    assert_eq!(t.first_failure(), Some((2, FailureKind::Error)));
    assert_eq!(FailureKind::Error.name(), "error");
    assert_eq!(FailureKind::Mismatch.name(), "mismatch");
}
