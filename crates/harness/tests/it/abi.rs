use harness::abi::{AbiError, LaunchInfo};

#[test]
fn a_valid_description_is_read_field_by_field() {
    let info = LaunchInfo::from_words(&[1, 64, 32, 2, 128, 49152, 64, 0]).expect("valid");
    assert_eq!(
        (
            info.block_m,
            info.block_n,
            info.stages,
            info.threads,
            info.dynamic_smem_bytes,
            info.head_dim
        ),
        (64, 32, 2, 128, 49152, 64)
    );
    assert_eq!(info.grid_x(512), 8);
    assert_eq!(info.grid_x(513), 9);
    assert_eq!(info.grid_x(1), 1);
}

#[test]
fn bad_descriptions_are_rejected() {
    assert_eq!(LaunchInfo::from_words(&[-1; 8]), Err(AbiError::NotWritten));
    assert_eq!(
        LaunchInfo::from_words(&[2, 64, 64, 2, 128, 0, 64, 0]),
        Err(AbiError::Version(2))
    );
    for words in [
        [1, 64, 64, 2, 100, 0, 64, 0],  // threads not whole warps
        [1, 64, 64, 2, 2048, 0, 64, 0], // too many threads
        [1, 0, 64, 2, 128, 0, 64, 0],   // BLOCK_M 0
        [1, 64, 64, 2, 128, -5, 64, 0], // negative shared memory
        [1, 64, 64, 2, 128, 0, 0, 0],   // HEAD_DIM 0
    ] {
        assert!(
            matches!(LaunchInfo::from_words(&words), Err(AbiError::Field { .. })),
            "{words:?}"
        );
    }
}
