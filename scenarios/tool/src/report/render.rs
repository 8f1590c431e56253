//! Output: markdown tables, SVG line plots with confidence intervals (plotters), and the report
//! file, headed by the command that regenerates it.
//!
//! Everything here is a pure function of the numbers it is given (no date, no host, no wall
//! clock), so two runs of one command write identical files.

use std::fmt::Write as _;
use std::path::Path;

use plotters::prelude::*;

use super::ReportError;
use super::stats::Estimate;

/// A markdown table.
#[derive(Clone, Debug, Default)]
pub(crate) struct Table {
    pub(crate) header: Vec<String>,
    pub(crate) rows: Vec<Vec<String>>,
}

impl Table {
    pub(crate) fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Table {
        Table {
            header: header.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    pub(crate) fn row(&mut self, cells: Vec<String>) {
        assert_eq!(cells.len(), self.header.len(), "a full row");
        self.rows.push(cells);
    }

    pub(crate) fn markdown(&self) -> String {
        let mut out = String::new();
        let line = |cells: &[String]| format!("| {} |\n", cells.join(" | "));
        out.push_str(&line(&self.header));
        out.push_str(&format!("|{}\n", "---|".repeat(self.header.len())));
        for r in &self.rows {
            out.push_str(&line(r));
        }
        out
    }
}

/// `mean ± half-width`, with `decimals` digits.
pub(crate) fn est(e: &Estimate, decimals: usize) -> String {
    if e.mean.is_nan() {
        "—".to_owned()
    } else if e.half_width == 0.0 {
        format!("{:.*}", decimals, e.mean)
    } else {
        format!("{:.*} ± {:.*}", decimals, e.mean, decimals, e.half_width)
    }
}

/// One line of a plot: an estimate per x position.
#[derive(Clone, Debug)]
pub(crate) struct Series {
    pub(crate) name: String,
    pub(crate) values: Vec<Estimate>,
}

/// How a plot draws its series over its x positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// Lines: the positions are values of one swept setting, in order, and a line between two
    /// says how the figure moves between them.
    Lines,
    /// Grouped bars: the positions are unrelated categories (workloads), between which a line
    /// would claim a trend that is not there.
    Bars,
}

/// A plot over x positions (`xs`), one line or bar per series at each, with the 95% intervals
/// as error bars, and the legend beside the plot rather than on its data.
pub(crate) struct Plot<'a> {
    pub(crate) title: &'a str,
    pub(crate) x_desc: &'a str,
    pub(crate) y_desc: &'a str,
    pub(crate) xs: &'a [String],
    pub(crate) series: &'a [Series],
    pub(crate) shape: Shape,
}

/// The plot's size, and the legend's strip on its right.
const WIDTH: u32 = 860;
const HEIGHT: u32 = 420;
const LEGEND: u32 = 150;

impl Plot<'_> {
    /// The SVG document.
    pub(crate) fn svg(&self) -> Result<String, ReportError> {
        let mut out = String::new();
        self.draw(&mut out)
            .map_err(|e| ReportError::Plot(format!("{}: {e}", self.title)))?;
        Ok(out)
    }

    fn draw(&self, out: &mut String) -> Result<(), Box<dyn std::error::Error + '_>> {
        let root = SVGBackend::with_string(out, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE)?;
        let (area, legend) = root.split_horizontally(WIDTH - LEGEND);
        let top = self
            .series
            .iter()
            .flat_map(|s| s.values.iter().map(Estimate::high))
            .filter(|v| !v.is_nan())
            .fold(0.0f64, f64::max);
        let top = if top > 0.0 { top * 1.1 } else { 1.0 };
        let n = self.xs.len().max(1);
        let xs = self.xs;
        let mut chart = ChartBuilder::on(&area)
            .caption(self.title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..top)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n)
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < xs.len() {
                    xs[i as usize].clone()
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|y| short(*y))
            .x_desc(self.x_desc)
            .y_desc(self.y_desc)
            .draw()?;
        let count = self.series.len().max(1) as f64;
        for (k, s) in self.series.iter().enumerate() {
            let color = Palette99::pick(k).to_rgba();
            let defined = || {
                s.values
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| !e.mean.is_nan())
            };
            // Where series k stands at position i: the position itself for lines, its own
            // bar within the group for bars.
            let width = 0.8 / count;
            let at = |i: usize| match self.shape {
                Shape::Lines => i as f64,
                Shape::Bars => i as f64 - 0.4 + width * (k as f64 + 0.5),
            };
            match self.shape {
                Shape::Lines => {
                    let line = defined().map(|(i, e)| (at(i), e.mean));
                    chart.draw_series(LineSeries::new(line, color.stroke_width(2)))?;
                    chart.draw_series(
                        defined().map(|(i, e)| Circle::new((at(i), e.mean), 3, color.filled())),
                    )?;
                }
                Shape::Bars => {
                    chart.draw_series(defined().map(|(i, e)| {
                        let half = width * 0.45;
                        Rectangle::new(
                            [(at(i) - half, 0.0), (at(i) + half, e.mean)],
                            color.filled(),
                        )
                    }))?;
                }
            }
            match self.shape {
                Shape::Lines => {
                    chart.draw_series(defined().map(|(i, e)| {
                        ErrorBar::new_vertical(
                            at(i),
                            e.low().max(0.0),
                            e.mean,
                            e.high(),
                            color.stroke_width(1),
                            8,
                        )
                    }))?;
                }
                // On a bar, the interval alone: a whisker from its low to its high end.
                Shape::Bars => {
                    let cap = width * 0.15;
                    chart.draw_series(
                        defined()
                            .filter(|(_, e)| e.half_width > 0.0)
                            .flat_map(|(i, e)| {
                                let (x, low, high) = (at(i), e.low().max(0.0), e.high());
                                [
                                    vec![(x, low), (x, high)],
                                    vec![(x - cap, low), (x + cap, low)],
                                    vec![(x - cap, high), (x + cap, high)],
                                ]
                            })
                            .map(|points| PathElement::new(points, BLACK.stroke_width(1))),
                    )?;
                }
            }
            let y = 56 + 24 * k as i32;
            let swatch: [(i32, i32); 2] = [(12, y - 6), (34, y + 6)];
            match self.shape {
                Shape::Lines => legend.draw(&PathElement::new(
                    vec![(12, y), (34, y)],
                    color.stroke_width(3),
                ))?,
                Shape::Bars => legend.draw(&Rectangle::new(swatch, color.filled()))?,
            }
            legend.draw(&Text::new(
                s.name.clone(),
                (42, y - 7),
                ("sans-serif", 14).into_font().color(&BLACK),
            ))?;
        }
        root.present()?;
        Ok(())
    }
}

/// A compact axis label.
fn short(y: f64) -> String {
    if y.abs() >= 10_000.0 {
        format!("{:.0}k", y / 1000.0)
    } else if y.abs() >= 100.0 || y == y.round() {
        format!("{y:.0}")
    } else {
        format!("{y:.2}")
    }
}

/// A report file being written.
pub(crate) struct Doc {
    name: String,
    text: String,
    plots: Vec<(String, String)>,
}

impl Doc {
    /// A report named `name` (the file `<name>.md`), headed by `title` and the command that
    /// regenerates it.
    pub(crate) fn new(name: &str, title: &str, command: &str) -> Doc {
        Doc::headed(
            name,
            title,
            command,
            "the same command writes the same numbers",
        )
    }

    /// A report of wall-clock measurements: headed like [`Doc::new`], but without the promise
    /// that a rerun gives the same numbers.
    pub(crate) fn measured(name: &str, title: &str, command: &str) -> Doc {
        Doc::headed(
            name,
            title,
            command,
            "wall-clock figures, so a rerun measures anew",
        )
    }

    fn headed(name: &str, title: &str, command: &str, promise: &str) -> Doc {
        Doc {
            name: name.to_owned(),
            text: format!(
                "# {title}\n\nGenerated by (run from the repository root; {promise}):\n\n```sh\n{command}\n```\n\n"
            ),
            plots: Vec::new(),
        }
    }

    /// The markdown written so far (for tests).
    #[cfg(test)]
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    pub(crate) fn para(&mut self, s: &str) {
        self.text.push_str(s.trim_end());
        self.text.push_str("\n\n");
    }

    pub(crate) fn heading(&mut self, s: &str) {
        let _ = write!(self.text, "## {s}\n\n");
    }

    pub(crate) fn subheading(&mut self, s: &str) {
        let _ = write!(self.text, "### {s}\n\n");
    }

    pub(crate) fn table(&mut self, t: &Table) {
        self.text.push_str(&t.markdown());
        self.text.push('\n');
    }

    /// Adds a plot, written beside the report as `<name>-<slug>.svg`.
    pub(crate) fn plot(&mut self, slug: &str, plot: &Plot<'_>) -> Result<(), ReportError> {
        let file = format!("{}-{slug}.svg", self.name);
        let _ = write!(self.text, "![{}]({file})\n\n", plot.title);
        self.plots.push((file, plot.svg()?));
        Ok(())
    }

    pub(crate) fn bullets(&mut self, items: &[String]) {
        for i in items {
            let _ = writeln!(self.text, "- {i}");
        }
        self.text.push('\n');
    }

    /// Writes `<dir>/<name>.md` and the plots; returns the report's path.
    pub(crate) fn write(self, dir: &Path) -> Result<std::path::PathBuf, ReportError> {
        let io = |path: &Path, source| ReportError::Io {
            path: path.display().to_string(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        for (file, svg) in &self.plots {
            let path = dir.join(file);
            std::fs::write(&path, svg).map_err(|e| io(&path, e))?;
        }
        let path = dir.join(format!("{}.md", self.name));
        std::fs::write(&path, self.text.trim_end().to_owned() + "\n").map_err(|e| io(&path, e))?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_markdown() {
        let mut t = Table::new(["a", "b"]);
        t.row(vec!["1".into(), "2".into()]);
        assert_eq!(t.markdown(), "| a | b |\n|---|---|\n| 1 | 2 |\n");
    }

    #[test]
    fn plots_are_svg_with_their_labels() {
        let xs = vec!["1".to_owned(), "2".to_owned()];
        let series = vec![Series {
            name: "mvcc".into(),
            values: vec![Estimate::of(&[1.0, 2.0]), Estimate::of(&[3.0, 3.5])],
        }];
        for shape in [Shape::Lines, Shape::Bars] {
            let svg = Plot {
                title: "t",
                x_desc: "x",
                y_desc: "y",
                xs: &xs,
                series: &series,
                shape,
            }
            .svg()
            .unwrap();
            assert!(svg.starts_with("<svg"), "{}", &svg[..40]);
            assert!(
                svg.contains("\nmvcc\n</text>") && svg.contains("\n2\n</text>"),
                "{svg}"
            );
            // The series (Palette99's first colour): bars are filled rectangles, one per
            // position plus the legend's swatch; lines a polyline through the positions.
            let count = |tag: &str, attrs: &str| {
                svg.lines()
                    .filter(|l| l.starts_with(tag) && l.contains(attrs))
                    .count()
            };
            let bars = count("<rect", "fill=\"#E6194B\"");
            let lines = count("<polyline", "stroke=\"#E6194B\" stroke-width=\"2\"");
            match shape {
                Shape::Bars => assert_eq!((bars, lines), (3, 0), "{svg}"),
                Shape::Lines => assert_eq!((bars, lines), (0, 1), "{svg}"),
            }
        }
    }

    /// The legend is drawn right of the plot's area, where no data can be.
    #[test]
    fn the_legend_stays_off_the_data() {
        let xs = vec!["a".to_owned()];
        let series = vec![Series {
            name: "mvcc".into(),
            values: vec![Estimate::of(&[5.0, 5.0])],
        }];
        let svg = Plot {
            title: "t",
            x_desc: "x",
            y_desc: "y",
            xs: &xs,
            series: &series,
            shape: Shape::Bars,
        }
        .svg()
        .unwrap();
        let label = svg.find("\nmvcc\n</text>").unwrap();
        let tag = &svg[svg[..label].rfind("<text").unwrap()..label];
        let x: f64 = tag
            .split("x=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(x >= f64::from(WIDTH - LEGEND), "legend at x {x}: {tag}");
    }
}
