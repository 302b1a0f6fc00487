//! Rendering: the minijinja templates (HTML auto-escaped), the filters that write numbers the
//! way the terminal summaries do, and the assets every page embeds (uPlot, its CSS, the page
//! script and style).

use anyhow::{Context, Result};
use minijinja::{Environment, Value, context};
use serde::Serialize;

const UPLOT_JS: &str = include_str!("assets/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("assets/uPlot.min.css");
const REPORT_JS: &str = include_str!("assets/report.js");
const REPORT_CSS: &str = include_str!("assets/report.css");

fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    for (name, text) in [
        ("base.html", include_str!("templates/base.html")),
        ("run.html", include_str!("templates/run.html")),
        ("capacity.html", include_str!("templates/capacity.html")),
        ("experiment.html", include_str!("templates/experiment.html")),
        ("history.html", include_str!("templates/history.html")),
        ("bisect.html", include_str!("templates/bisect.html")),
    ] {
        env.add_template(name, text).expect("the report templates parse");
    }
    env.add_filter("ms", |v: Option<f64>| v.map_or("–".to_string(), ms));
    env.add_filter("count", |v: Option<f64>| {
        v.map_or("–".to_string(), crate::console::group)
    });
    env.add_filter("rate", |v: Option<f64>| v.map_or("–".to_string(), rate));
    env.add_filter("fixed", |v: Option<f64>, digits: Option<usize>| {
        v.map_or("–".to_string(), |v| format!("{v:.*}", digits.unwrap_or(2)))
    });
    env.add_filter("bytes", |v: Option<f64>| v.map_or("–".to_string(), bytes));
    env
}

/// Milliseconds with three decimals (what result.json holds, to the microsecond).
pub fn ms(v: f64) -> String {
    format!("{v:.3}")
}

/// A rate with thousands grouped and one decimal: 12,345.6.
pub fn rate(v: f64) -> String {
    let tenths = (v * 10.0).round();
    format!(
        "{}.{}",
        crate::console::group((tenths / 10.0).trunc()),
        (tenths % 10.0).abs() as u8
    )
}

fn bytes(v: f64) -> String {
    const G: f64 = 1024.0 * 1024.0 * 1024.0;
    if v >= G {
        format!("{:.1} GiB", v / G)
    } else {
        format!("{:.0} MiB", v / 1024.0 / 1024.0)
    }
}

/// JSON to embed in a `<script type="application/json">`: `<` escaped so no `</script>` in a
/// profile name or CQL text can end the element.
/// Text made safe inside an SVG or HTML element or attribute Rust writes itself.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub fn embed_json<T: Serialize>(value: &T) -> Result<String> {
    Ok(serde_json::to_string(value)?.replace('<', "\\u003c"))
}

/// Renders `template` with `ctx` plus the page's title, embedded data and assets.
pub fn render<C: Serialize, D: Serialize>(template: &str, title: &str, ctx: C, data: &D) -> Result<String> {
    let env = environment();
    let tmpl = env.get_template(template).expect("a template of this module");
    tmpl.render(context! {
        title => title,
        page => Value::from_serialize(&ctx),
        data_json => Value::from_safe_string(embed_json(data)?),
        uplot_js => Value::from_safe_string(UPLOT_JS.to_string()),
        uplot_css => Value::from_safe_string(UPLOT_CSS.to_string()),
        report_js => Value::from_safe_string(REPORT_JS.to_string()),
        report_css => Value::from_safe_string(REPORT_CSS.to_string()),
        version => env!("CARGO_PKG_VERSION"),
    })
    .with_context(|| format!("cannot render the {template} report page"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_as_the_summaries_write_them() {
        assert_eq!(ms(21.086207), "21.086");
        assert_eq!(rate(800.0), "800.0");
        assert_eq!(rate(12345.67), "12,345.7");
        assert_eq!(rate(999.96), "1,000.0");
        assert_eq!(bytes(4.0 * 1024.0 * 1024.0 * 1024.0), "4.0 GiB");
    }

    #[test]
    fn embedded_json_cannot_close_its_script_element() {
        let text = embed_json(&serde_json::json!({"cql": "</script><script>alert(1)"})).unwrap();
        assert!(!text.contains("</"), "{text}");
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["cql"], "</script><script>alert(1)");
    }
}
