//! Small self-contained SVG charts (line chart, histogram) for the
//! evaluation tool and `simdb calibrate`. Pure: returns the SVG text.

use std::fmt::Write;

const W: f64 = 860.0;
const H: f64 = 520.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 300.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
const COLOURS: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn frame(out: &mut String, title: &str, x_label: &str, y_label: &str) {
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="{}" y="22" text-anchor="middle" font-size="14">{}</text>
<text x="{}" y="{}" text-anchor="middle">{}</text>
<text x="16" y="{}" text-anchor="middle" transform="rotate(-90 16 {})">{}</text>
"#,
        (LEFT + W - RIGHT) / 2.0,
        escape(title),
        (LEFT + W - RIGHT) / 2.0,
        H - 12.0,
        escape(x_label),
        (TOP + H - BOTTOM) / 2.0,
        (TOP + H - BOTTOM) / 2.0,
        escape(y_label),
    );
}

/// Plot area coordinates of data point `(x, y)` for x in `[0, x_max]`,
/// y in `[0, y_max]`.
fn at(x: f64, y: f64, x_max: f64, y_max: f64) -> (f64, f64) {
    let pw = W - LEFT - RIGHT;
    let ph = H - TOP - BOTTOM;
    (
        LEFT + pw * x / x_max.max(f64::MIN_POSITIVE),
        TOP + ph * (1.0 - y / y_max.max(f64::MIN_POSITIVE)),
    )
}

/// Axes, x ticks at data positions, and y grid lines at `(data y, label)`.
fn axes(out: &mut String, x_max: f64, y_max: f64, x_ticks: &[f64], y_ticks: &[(f64, String)]) {
    let (x0, y0) = at(0.0, 0.0, x_max, y_max);
    let (x1, y1) = at(x_max, y_max, x_max, y_max);
    let _ = writeln!(
        out,
        r##"<path d="M{x0} {y1} L{x0} {y0} L{x1} {y0}" stroke="black" fill="none"/>"##
    );
    for &t in x_ticks {
        let (x, _) = at(t, 0.0, x_max, y_max);
        let _ = writeln!(
            out,
            r##"<line x1="{x}" y1="{y0}" x2="{x}" y2="{}" stroke="black"/><text x="{x}" y="{}" text-anchor="middle">{t}</text>"##,
            y0 + 4.0,
            y0 + 18.0
        );
    }
    for (t, label) in y_ticks {
        let (_, y) = at(0.0, *t, x_max, y_max);
        let _ = writeln!(
            out,
            r##"<line x1="{}" y1="{y}" x2="{x1}" y2="{y}" stroke="#ddd"/><text x="{}" y="{}" text-anchor="end">{label}</text>"##,
            x0 - 4.0,
            x0 - 7.0,
            y + 4.0,
        );
    }
}

/// One line of a [`chart`].
#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    /// Value `i` is drawn at x = i.
    pub values: Vec<f64>,
    /// Lines of one group share a colour.
    pub group: usize,
    pub dashed: bool,
    pub thin: bool,
}

/// A line chart: each series is `(label, values)` with value `i` at x = i,
/// one colour each; labels containing "verified" are dashed.
/// The y axis runs from 0 to 1 when every value lies in `[0, 1]`.
pub fn lines(title: &str, x_label: &str, y_label: &str, series: &[(String, Vec<f64>)]) -> String {
    let series: Vec<Series> = series
        .iter()
        .enumerate()
        .map(|(i, (label, values))| Series {
            label: label.clone(),
            values: values.clone(),
            group: i,
            dashed: label.contains("verified"),
            thin: false,
        })
        .collect();
    chart(title, x_label, y_label, &series)
}

/// A line chart of styled series (see [`Series`]).
pub fn chart(title: &str, x_label: &str, y_label: &str, series: &[Series]) -> String {
    let n = series
        .iter()
        .map(|s| s.values.len())
        .max()
        .unwrap_or(1)
        .max(2);
    let x_max = (n - 1) as f64;
    let top = series
        .iter()
        .flat_map(|s| s.values.iter().copied())
        .fold(0.0f64, f64::max);
    let y_max = if top <= 1.0 { 1.0 } else { top * 1.05 };
    let mut out = String::new();
    frame(&mut out, title, x_label, y_label);
    let x_ticks: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let y_ticks: Vec<(f64, String)> = (0..=5)
        .map(|i| {
            let t = y_max * f64::from(i) / 5.0;
            let label = if t.fract() == 0.0 {
                format!("{t}")
            } else {
                format!("{t:.2}")
            };
            (t, label)
        })
        .collect();
    axes(&mut out, x_max, y_max, &x_ticks, &y_ticks);
    for (si, sr) in series.iter().enumerate() {
        let (label, values) = (&sr.label, &sr.values);
        let colour = COLOURS[sr.group % COLOURS.len()];
        let dash = if sr.dashed {
            r#" stroke-dasharray="6 3""#
        } else {
            ""
        };
        let width = if sr.thin { 1.2 } else { 2.5 };
        let mut d = String::new();
        for (i, v) in values.iter().enumerate() {
            let (x, y) = at(i as f64, *v, x_max, y_max);
            let _ = write!(d, "{}{x:.1} {y:.1} ", if i == 0 { "M" } else { "L" });
        }
        let _ = writeln!(
            out,
            r#"<path d="{d}" stroke="{colour}" stroke-width="{width}" fill="none"{dash}/>"#
        );
        let ly = TOP + 16.0 * si as f64;
        let lx = W - RIGHT + 12.0;
        let _ = writeln!(
            out,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{colour}" stroke-width="{width}"{dash}/><text x="{}" y="{}" font-size="11">{}</text>"#,
            lx + 22.0,
            lx + 28.0,
            ly + 4.0,
            escape(label)
        );
    }
    out.push_str("</svg>\n");
    out
}

/// A histogram of counts per distance 0..counts.len(), one bar group per
/// distance and one bar per series `(label, counts)`. The y axis is
/// logarithmic (`log10(1 + count)`), so that a handful of near-copies shows
/// beside thousands of distinct pairs.
pub fn histogram(title: &str, x_label: &str, series: &[(String, Vec<u64>)]) -> String {
    let n = series.iter().map(|s| s.1.len()).max().unwrap_or(1).max(1);
    let top = series
        .iter()
        .flat_map(|s| s.1.iter().copied())
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let scale = |c: f64| (1.0 + c).log10();
    let x_max = n as f64;
    let y_max = scale(top).ceil().max(1.0);
    let mut out = String::new();
    frame(&mut out, title, x_label, "documents or pairs (log scale)");
    let step = (n / 16).max(1);
    let x_ticks: Vec<f64> = (0..n).step_by(step).map(|i| i as f64 + 0.5).collect();
    // Grid lines at 1, 10, 100, ...
    let y_ticks: Vec<(f64, String)> = (0..(y_max as i32))
        .map(|p| {
            let c = 10f64.powi(p);
            (scale(c), format!("{c}"))
        })
        .collect();
    axes(&mut out, x_max, y_max, &[], &y_ticks);
    for &t in &x_ticks {
        let (x, y0) = at(t, 0.0, x_max, y_max);
        let _ = writeln!(
            out,
            r#"<text x="{x}" y="{}" text-anchor="middle">{}</text>"#,
            y0 + 18.0,
            t as u64
        );
    }
    let per = 0.8 / series.len().max(1) as f64;
    for (si, (label, counts)) in series.iter().enumerate() {
        let colour = COLOURS[si % COLOURS.len()];
        for (i, &c) in counts.iter().enumerate() {
            if c == 0 {
                continue;
            }
            let (x, y) = at(
                i as f64 + 0.1 + per * si as f64,
                scale(c as f64),
                x_max,
                y_max,
            );
            let (x2, y0) = at(i as f64 + 0.1 + per * (si + 1) as f64, 0.0, x_max, y_max);
            let _ = writeln!(
                out,
                r#"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{colour}"><title>{}: {c} at {i}</title></rect>"#,
                (x2 - x).max(0.5),
                y0 - y,
                escape(label)
            );
        }
        let ly = TOP + 16.0 * si as f64;
        let lx = W - RIGHT + 12.0;
        let _ = writeln!(
            out,
            r#"<rect x="{lx}" y="{}" width="14" height="10" fill="{colour}"/><text x="{}" y="{}">{}</text>"#,
            ly - 5.0,
            lx + 20.0,
            ly + 4.0,
            escape(label)
        );
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_well_formed_svg() {
        let l = lines(
            "t <1>",
            "k",
            "share",
            &[
                ("a & b".into(), vec![0.0, 0.5, 1.0]),
                ("verified".into(), vec![1.0, 0.2]),
            ],
        );
        assert!(l.starts_with("<svg") && l.ends_with("</svg>\n"));
        assert!(l.contains("t &lt;1&gt;") && l.contains("a &amp; b"));
        assert_eq!(l.matches("<path").count(), 3); // axes + 2 series
        let h = histogram("h", "distance", &[("pairs".into(), vec![0, 3, 10, 2])]);
        assert_eq!(h.matches("<title>").count(), 3); // zero bars are skipped
                                                     // Empty input does not panic.
        let _ = histogram("h", "d", &[]);
        let _ = lines("l", "k", "s", &[]);
    }
}
