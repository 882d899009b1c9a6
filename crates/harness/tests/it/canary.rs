use harness::canary::{
    GUARD_ALIGN, GuardedLayout, Side, find_corruption, guard_pattern, region_name,
};

#[test]
fn layout_puts_data_between_guards_with_the_after_guard_flush_against_it() {
    let l = GuardedLayout::new(1000, 512).expect("aligned");
    assert_eq!(l.total_bytes(), 2024);
    assert_eq!(l.guard_offset(Side::Before), 0);
    assert_eq!(l.data_offset(), 512);
    assert_eq!(l.guard_offset(Side::After), 1512);
    assert_eq!(l.data_offset() % GUARD_ALIGN, 0);
    let none = GuardedLayout::new(64, 0).expect("no guards");
    assert_eq!((none.total_bytes(), none.data_offset()), (64, 0));
    assert!(GuardedLayout::new(64, 100).is_err());
}

#[test]
fn patterns_are_deterministic_and_distinct_per_region_and_seed() {
    let a = guard_pattern(1, "o", Side::After, 4096);
    assert_eq!(a.len(), 4096);
    assert_eq!(a, guard_pattern(1, "o", Side::After, 4096));
    assert_ne!(a, guard_pattern(1, "o", Side::Before, 4096));
    assert_ne!(a, guard_pattern(1, "q", Side::After, 4096));
    assert_ne!(a, guard_pattern(2, "o", Side::After, 4096));
    // Not a constant fill: a kernel writing one repeated value cannot restore it.
    assert!(a.windows(2).any(|w| w[0] != w[1]));
    assert_eq!(guard_pattern(1, "o", Side::After, 13).len(), 13);
}

#[test]
fn intact_guard_reports_nothing() {
    let p = guard_pattern(5, "k", Side::Before, 256);
    assert_eq!(find_corruption("k", Side::Before, &p, &p), None);
}

#[test]
fn a_write_one_element_past_the_end_is_found_next_to_the_data() {
    let expected = guard_pattern(5, "o", Side::After, 1024);
    let mut actual = expected.clone();
    actual[0] ^= 0xFF;
    actual[1] ^= 0x01;
    let c = find_corruption("o", Side::After, &expected, &actual).expect("corrupted");
    assert_eq!(c.region, "o.after");
    assert_eq!(
        (c.bytes_changed, c.nearest_to_data, c.farthest_from_data),
        (2, 0, 1)
    );
}

#[test]
fn a_write_before_the_start_is_measured_from_the_data() {
    let expected = guard_pattern(5, "o", Side::Before, 1024);
    let mut actual = expected.clone();
    actual[1023] ^= 0x10; // the byte right before the data
    actual[900] ^= 0x10;
    let c = find_corruption("o", Side::Before, &expected, &actual).expect("corrupted");
    assert_eq!(c.region, region_name("o", Side::Before));
    assert_eq!(
        (c.bytes_changed, c.nearest_to_data, c.farthest_from_data),
        (2, 0, 123)
    );
}

#[test]
fn a_short_read_counts_as_changed() {
    let expected = guard_pattern(5, "v", Side::After, 16);
    let c = find_corruption("v", Side::After, &expected, &expected[..10]).expect("corrupted");
    assert_eq!((c.bytes_changed, c.nearest_to_data), (6, 10));
}
