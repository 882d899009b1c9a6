use harness::stats::{
    StopReason, StopRule, median_ci_relative, percentile_sorted, relative_sem, summarize,
};

#[test]
fn percentiles_interpolate_between_ranks() {
    let xs = [1.0, 2.0, 3.0, 4.0, 5.0];
    assert_eq!(percentile_sorted(&xs, 0.0), 1.0);
    assert_eq!(percentile_sorted(&xs, 50.0), 3.0);
    assert!((percentile_sorted(&xs, 90.0) - 4.6).abs() < 1e-12);
    assert_eq!(percentile_sorted(&xs, 100.0), 5.0);
    assert!((percentile_sorted(&[1.0, 2.0, 3.0, 4.0], 25.0) - 1.75).abs() < 1e-12);
    assert_eq!(percentile_sorted(&[7.0], 99.0), 7.0);
    assert!(percentile_sorted(&[], 50.0).is_nan());
}

#[test]
fn summary_of_a_textbook_sample() {
    // Population stdev 2; sample stdev sqrt(32/7).
    let s = summarize(&[9.0, 2.0, 5.0, 4.0, 4.0, 7.0, 4.0, 5.0]).expect("summary");
    assert_eq!(s.samples, 8);
    assert_eq!((s.min, s.max, s.mean), (2.0, 9.0, 5.0));
    assert_eq!(s.p50, 4.5);
    assert!((s.stdev - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
    assert!((s.p99 - 8.86).abs() < 1e-12);
    assert!(
        (relative_sem(&s).expect("sem") - (32.0f64 / 7.0).sqrt() / 8f64.sqrt() / 5.0).abs() < 1e-12
    );
    assert!(summarize(&[]).is_none());
    assert!(summarize(&[1.0, f64::NAN]).is_none());
    assert_eq!(summarize(&[3.0]).expect("one").stdev, 0.0);
}

#[test]
fn median_interval_ignores_a_few_outliers() {
    let mut xs: Vec<f64> = (0..100).map(|i| 10.0 + (i % 10) as f64 * 0.001).collect();
    let clean = {
        let mut s = xs.clone();
        s.sort_by(f64::total_cmp);
        median_ci_relative(&s).expect("ci")
    };
    xs[0] = 1000.0;
    xs[1] = 2000.0;
    xs.sort_by(f64::total_cmp);
    let noisy = median_ci_relative(&xs).expect("ci");
    assert!(noisy < 0.001, "{noisy}");
    assert!((noisy - clean).abs() < 0.001);
    assert!(median_ci_relative(&[1.0; 7]).is_none());
    assert_eq!(median_ci_relative(&[5.0; 50]), Some(0.0));
}

#[test]
fn stop_rule_converges_caps_time_and_samples() {
    let rule = StopRule {
        target_noise: 0.005,
        max_seconds: 2.0,
        min_samples: 20,
        max_samples: 1000,
    };
    let steady = vec![10.0; 20];
    assert_eq!(rule.decide(&steady[..19], 0.1), None);
    assert_eq!(rule.decide(&steady, 0.1), Some(StopReason::Converged));
    // Alternating 10 and 20: the median's interval stays wide.
    let noisy: Vec<f64> = (0..200)
        .map(|i| if i % 2 == 0 { 10.0 } else { 20.0 })
        .collect();
    assert_eq!(rule.decide(&noisy, 0.5), None);
    assert_eq!(rule.decide(&noisy, 2.5), Some(StopReason::TimeCap));
    let many: Vec<f64> = (0..1000)
        .map(|i| if i % 2 == 0 { 10.0 } else { 20.0 })
        .collect();
    assert_eq!(rule.decide(&many, 0.5), Some(StopReason::SampleCap));
    assert_eq!(StopReason::Converged.name(), "converged");
}
