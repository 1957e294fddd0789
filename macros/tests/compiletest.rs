//! The compiler's messages for each mistake `#[fenced_write]` catches, and the shapes it
//! accepts.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
