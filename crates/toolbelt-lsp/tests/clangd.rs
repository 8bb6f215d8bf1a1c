#![allow(clippy::too_many_lines)]
//! The `lsp` tool against clangd (Debian's package; `scripts/setup.sh` checks for it) on
//! a small C project with a `compile_flags.txt`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Workspace, clangd, lsp_json, ok};
use serde_json::json;

const SHAPES_H: &str = "\
#ifndef SHAPES_H
#define SHAPES_H
double square_area(double side);
#endif
";

const SHAPES_C: &str = "\
#include \"shapes.h\"

double square_area(double side) {
    return side * side;
}
";

const MAIN_C: &str = "\
#include \"shapes.h\"

int main(void) {
    double a = square_area(2.0);
    int *p = a;
    return (int)a;
}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn definitions_references_symbols_and_diagnostics_in_c() {
    let Some(bin) = clangd() else { return };
    let ws = Workspace::new();
    ws.write("shapes.h", SHAPES_H);
    ws.write("shapes.c", SHAPES_C);
    ws.write("main.c", MAIN_C);
    ws.write("compile_flags.txt", "-std=c11\n-Wall\n");
    let (tool, servers) = ws.tool(&lsp_json(
        "c",
        &bin,
        &["--log=error"],
        &[(".c", "c"), (".h", "c")],
    ));

    let diags = ok(
        &ws,
        &tool,
        json!({"operation": "diagnostics", "filePath": "main.c"}),
    )
    .await;
    assert!(diags.contains("main.c:5:10: int *p = a;"), "{diags}");
    assert!(diags.contains("error:"), "{diags}");

    let def = ok(
        &ws,
        &tool,
        json!({"operation": "goToDefinition", "filePath": "main.c", "line": 4, "character": 16}),
    )
    .await;
    assert!(
        def.contains("shapes.c:3:8: double square_area(double side) {")
            || def.contains("shapes.h:3:8: double square_area(double side);"),
        "{def}"
    );
    let hover = ok(
        &ws,
        &tool,
        json!({"operation": "hover", "filePath": "main.c", "line": 4, "character": 16}),
    )
    .await;
    assert!(hover.contains("square_area"), "{hover}");
    let symbols = ok(
        &ws,
        &tool,
        json!({"operation": "documentSymbol", "filePath": "shapes.c"}),
    )
    .await;
    assert!(
        symbols.contains("Function square_area — shapes.c:3:8"),
        "{symbols}"
    );
    let refs = ok(
        &ws,
        &tool,
        json!({"operation": "findReferences", "filePath": "main.c", "line": 4, "character": 16}),
    )
    .await;
    assert!(
        refs.contains("main.c:4:16: double a = square_area(2.0);"),
        "{refs}"
    );
    assert!(
        refs.contains("shapes.c:3:8: double square_area(double side) {"),
        "{refs}"
    );
    servers.shutdown().await;
}
