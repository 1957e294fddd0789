//! The throughput chart, written as SVG by hand: one panel per database (for SQLite, one
//! per guard execution mode, the panels of one database sharing their scale), cycles per
//! second against workers (log scale), guard (solid) and raw (dashed), distinct and
//! contended rows.

use std::fmt::Write as _;

use crate::suite::{Database, Kind, Results};
use crate::workload::Rows;

const PANEL_WIDTH: f64 = 440.0;
const PANEL_HEIGHT: f64 = 300.0;
const MARGIN_LEFT: f64 = 70.0;
const MARGIN_TOP: f64 = 50.0;
const MARGIN_BOTTOM: f64 = 90.0;
const PLOT_WIDTH: f64 = PANEL_WIDTH - MARGIN_LEFT - 20.0;
const PLOT_HEIGHT: f64 = PANEL_HEIGHT - MARGIN_TOP - 40.0;

/// One line of a panel.
struct Series {
    label: String,
    colour: &'static str,
    dashed: bool,
    points: Vec<(usize, f64)>,
}

/// The chart of the guard-against-raw comparisons in `results`.
pub(crate) fn svg(results: &Results) -> String {
    // In the order they ran.
    let mut databases: Vec<Database> = Vec::new();
    for c in &results.comparisons {
        if !databases.contains(&c.database) {
            databases.push(c.database);
        }
    }
    let panels: Vec<(Database, Vec<Series>)> = databases
        .iter()
        .map(|&d| (d, series_of(d, results)))
        .collect();
    let width = PANEL_WIDTH * databases.len().max(1) as f64;
    let height = PANEL_HEIGHT + MARGIN_BOTTOM - 40.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        out,
        r#"<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>"#
    );
    let names = results.side_names(Kind::GuardVsRaw(Rows::Distinct));
    let b = if results.control {
        names.b
    } else {
        "raw driver"
    };
    let _ = writeln!(
        out,
        r#"<text x="{}" y="20" text-anchor="middle" font-size="15">Lease cycles per second against workers: {} (solid) and {b} (dashed)</text>"#,
        width / 2.0,
        names.a
    );
    for (i, (database, series)) in panels.iter().enumerate() {
        // One scale for the panels of one database, so that SQLite's execution modes
        // compare by the height of their lines.
        let highest = panels
            .iter()
            .filter(|(other, _)| same_database(*other, *database))
            .flat_map(|(_, series)| series.iter().flat_map(|s| s.points.iter().map(|p| p.1)))
            .fold(0.0, f64::max);
        panel(
            &mut out,
            database.label(),
            series,
            nice_ceiling(highest * 1.05),
            i as f64 * PANEL_WIDTH,
        );
    }
    out.push_str("</svg>\n");
    out
}

/// Whether two panels show the same database (in different modes, for SQLite).
fn same_database(a: Database, b: Database) -> bool {
    std::mem::discriminant(&a) == std::mem::discriminant(&b)
}

fn series_of(database: Database, results: &Results) -> Vec<Series> {
    let names = results.side_names(Kind::GuardVsRaw(Rows::Distinct));
    let pick = |rows: Rows, guard: bool| -> Vec<(usize, f64)> {
        results
            .comparisons
            .iter()
            .filter(|c| c.database == database && c.kind == Kind::GuardVsRaw(rows))
            .map(|c| {
                let s = if guard { c.a } else { c.b };
                (c.workers, s.cycles_per_sec)
            })
            .filter(|(_, v)| v.is_finite())
            .collect()
    };
    vec![
        Series {
            label: format!("distinct rows, {}", names.a),
            colour: "#1f77b4",
            dashed: false,
            points: pick(Rows::Distinct, true),
        },
        Series {
            label: format!("distinct rows, {}", names.b),
            colour: "#1f77b4",
            dashed: true,
            points: pick(Rows::Distinct, false),
        },
        Series {
            label: format!("contended row, {}", names.a),
            colour: "#d62728",
            dashed: false,
            points: pick(Rows::Contended, true),
        },
        Series {
            label: format!("contended row, {}", names.b),
            colour: "#d62728",
            dashed: true,
            points: pick(Rows::Contended, false),
        },
    ]
}

/// One panel titled `title`, its y axis from 0 to `top`, starting `left` from the
/// chart's left edge.
fn panel(out: &mut String, title: &str, series: &[Series], top: f64, left: f64) {
    let mut workers: Vec<usize> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    workers.sort_unstable();
    workers.dedup();
    let x0 = left + MARGIN_LEFT;
    let y0 = MARGIN_TOP + PLOT_HEIGHT;
    let (lo, hi) = match (workers.first(), workers.last()) {
        (Some(&lo), Some(&hi)) => ((lo as f64).log2(), (hi as f64).log2()),
        _ => (0.0, 0.0),
    };
    let x_of = |w: usize| {
        if hi > lo {
            x0 + ((w as f64).log2() - lo) / (hi - lo) * PLOT_WIDTH
        } else {
            x0 + PLOT_WIDTH / 2.0
        }
    };
    let y_of = |v: f64| y0 - v / top * PLOT_HEIGHT;

    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle" font-size="14">{}</text>"#,
        x0 + PLOT_WIDTH / 2.0,
        MARGIN_TOP - 12.0,
        escape(title)
    );
    for k in 0..=5 {
        let v = top * f64::from(k) / 5.0;
        let y = y_of(v);
        let _ = writeln!(
            out,
            r##"<line x1="{x0}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            x0 + PLOT_WIDTH,
            x0 - 6.0,
            y + 4.0,
            thousands(v)
        );
    }
    for &w in &workers {
        let x = x_of(w);
        let _ = writeln!(
            out,
            r##"<line x1="{x:.1}" y1="{y0}" x2="{x:.1}" y2="{:.1}" stroke="#eee"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{w}</text>"##,
            MARGIN_TOP,
            y0 + 16.0
        );
    }
    let _ = writeln!(
        out,
        r#"<line x1="{x0}" y1="{y0}" x2="{:.1}" y2="{y0}" stroke="black"/><line x1="{x0}" y1="{y0}" x2="{x0}" y2="{MARGIN_TOP}" stroke="black"/>"#,
        x0 + PLOT_WIDTH
    );
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">workers (connections)</text>"#,
        x0 + PLOT_WIDTH / 2.0,
        y0 + 32.0
    );
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" transform="rotate(-90 {:.1} {:.1})">cycles/s</text>"#,
        left + 16.0,
        MARGIN_TOP + PLOT_HEIGHT / 2.0,
        left + 16.0,
        MARGIN_TOP + PLOT_HEIGHT / 2.0
    );
    for (i, s) in series.iter().enumerate() {
        let dash = if s.dashed {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        let points: Vec<String> = s
            .points
            .iter()
            .map(|&(w, v)| format!("{:.1},{:.1}", x_of(w), y_of(v)))
            .collect();
        let _ = writeln!(
            out,
            r#"<polyline fill="none" stroke="{}" stroke-width="2"{dash} points="{}"/>"#,
            s.colour,
            points.join(" ")
        );
        for &(w, v) in &s.points {
            let _ = writeln!(
                out,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{}"/>"#,
                x_of(w),
                y_of(v),
                s.colour
            );
        }
        let ly = y0 + 48.0 + (i / 2) as f64 * 16.0;
        let lx = x0 + (i % 2) as f64 * PLOT_WIDTH / 2.0;
        let _ = writeln!(
            out,
            r#"<line x1="{lx:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}" stroke-width="2"{dash}/><text x="{:.1}" y="{ly:.1}">{}</text>"#,
            ly - 4.0,
            lx + 24.0,
            ly - 4.0,
            s.colour,
            lx + 30.0,
            escape(&s.label)
        );
    }
}

/// The smallest 1, 2 or 5 times a power of ten at or above `v` (1 for nothing).
fn nice_ceiling(v: f64) -> f64 {
    if v.is_nan() || v <= 0.0 {
        return 1.0;
    }
    let power = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|&c| c >= v)
        .unwrap_or(10.0 * power)
}

/// A tick label: whole numbers with thin grouping.
fn thousands(v: f64) -> String {
    let n = v.round() as u64;
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Text escaped for XML.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_ceilings() {
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(nice_ceiling(3.0), 5.0);
        assert_eq!(nice_ceiling(1100.0), 2000.0);
        assert_eq!(nice_ceiling(5000.0), 5000.0);
        assert_eq!(nice_ceiling(7000.0), 10000.0);
    }

    #[test]
    fn thousands_grouping() {
        assert_eq!(thousands(0.0), "0");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(12345.0), "12,345");
        assert_eq!(thousands(1234567.0), "1,234,567");
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(escape("a < b & c"), "a &lt; b &amp; c");
    }
}
