//! Malformed input: hand-made or cut-down bytes, never real output. No parser may panic, and
//! what it cannot read must show up as unparsed or incomplete.

use parsers::Format;

const FORMATS: [Format; 6] = [
    Format::Ptxas,
    Format::Sass,
    Format::ComputeSanitizer,
    Format::ComputeSanitizerXml,
    Format::NcuCsv,
    Format::Harness,
];

#[test]
fn empty_input_is_incomplete_everywhere() {
    for format in FORMATS {
        let log = parsers::parse(format, "");
        assert!(!log.complete, "{format:?}");
        assert!(log.findings.is_empty());
    }
    assert_eq!(parsers::detect(""), None);
}

#[test]
fn binary_garbage_is_unparsed() {
    // Hand-made: pseudo-random bytes with a few newlines.
    let mut bytes = Vec::new();
    let mut x: u32 = 0x1234_5678;
    for i in 0..100_000 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        bytes.push(if i % 997 == 0 {
            b'\n'
        } else {
            (x & 0xff) as u8
        });
    }
    let text = String::from_utf8_lossy(&bytes);
    for format in FORMATS {
        let log = parsers::parse(format, &text);
        assert!(!log.complete, "{format:?}");
        let via_reader = parsers::parse_reader(format, &bytes[..]).unwrap();
        assert!(!via_reader.complete, "{format:?}");
    }
}

#[test]
fn truncated_xml_is_incomplete_but_keeps_its_records() {
    let text = crate::fixture("compute-sanitizer-xml/memcheck_oob.xml");
    let cut = text.rfind("<record>").unwrap();
    let log = parsers::parse(Format::ComputeSanitizerXml, &text[..cut]);
    assert!(!log.complete);
    assert!(!log.findings.is_empty());
}

#[test]
fn a_truncated_harness_document_is_unparsed() {
    // Hand-made: the first half of a document.
    let log = parsers::parse(
        Format::Harness,
        "{\"schema\": \"exhibit.harness/1\", \"producer\": \"har",
    );
    assert!(!log.complete);
    assert_eq!(log.unparsed_lines, 1);
}

#[test]
fn sanitizer_lines_with_missing_fields() {
    // Hand-made: record lines with their numbers and locations cut off.
    let text = "========= Invalid __global__ read of size\n=========     at \n=========     by thread \n\
                =========     and is  bytes after\n========= Program hit\n========= ERROR SUMMARY: many errors\n\
                ========= RACECHECK SUMMARY: (,)\n========= Error: Race reported between \n\
                =========     and  access at  [ hazards]\n========= Leaked\n";
    let log = parsers::parse(Format::ComputeSanitizer, text);
    assert!(log.unparsed_lines > 0);
    let log = parsers::parse(
        Format::Ptxas,
        "ptxas info    : Used registers, used barriers\n    bytes stack frame\nptxas\n(: error\n",
    );
    assert!(!log.complete || log.kernels.is_empty());
}
