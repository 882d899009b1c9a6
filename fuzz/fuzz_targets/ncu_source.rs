//! Fuzzes the ncu source-page parser: parsing whole, streaming through a small buffer, and detection must
//! never panic, and streaming must agree with parsing in memory.
#![no_main]

use libfuzzer_sys::fuzz_target;
use parsers::Format;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = parsers::detect(&text);
    let whole = parsers::parse(Format::NcuSource, &text);
    let reader = std::io::BufReader::with_capacity(61, data);
    let streamed = parsers::parse_reader(Format::NcuSource, reader).expect("reading a slice");
    if std::str::from_utf8(data).is_ok() && Format::NcuSource != Format::ComputeSanitizerXml {
        assert_eq!(whole, streamed);
    }
});
