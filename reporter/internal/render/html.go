package render

import (
	"fmt"
	"html"
	"io"
	"regexp"
	"strings"
)

// HTML writes d as one self-contained page: inline CSS, figures inlined as
// SVG (figures maps file name to SVG text), no scripts, no external fetches.
func HTML(w io.Writer, d Doc, figures map[string][]byte) error {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	fmt.Fprintf(&b, "<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n<main>\n", html.EscapeString(d.Title), css)
	fmt.Fprintf(&b, "<h1>%s</h1>\n", html.EscapeString(d.Title))
	for _, p := range d.Lead {
		fmt.Fprintf(&b, "<p class=\"lead\">%s</p>\n", inline(p))
	}
	b.WriteString("<nav><ol>")
	for i, s := range d.Sections {
		fmt.Fprintf(&b, "<li><a href=\"#s%d\">%s</a></li>", i+1, html.EscapeString(strings.TrimLeft(s.Title, "0123456789. ")))
	}
	b.WriteString("</ol></nav>\n")
	for i, s := range d.Sections {
		fmt.Fprintf(&b, "<section id=\"s%d\">\n<h2>%s</h2>\n", i+1, html.EscapeString(s.Title))
		for _, p := range s.Text {
			fmt.Fprintf(&b, "<p>%s</p>\n", inline(p))
		}
		lead := min(s.Lead, len(s.Tables))
		for _, t := range s.Tables[:lead] {
			htmlTable(&b, t)
		}
		for _, f := range s.Figures {
			if svg, ok := figures[f]; ok {
				fmt.Fprintf(&b, "<figure class=\"fig\" data-figure=\"%s\">\n%s\n</figure>\n", html.EscapeString(f), svg)
			}
		}
		for _, t := range s.Tables[lead:] {
			htmlTable(&b, t)
		}
		b.WriteString("</section>\n")
	}
	b.WriteString("</main>\n</body>\n</html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

var boldRe = regexp.MustCompile(`\*\*([^*]+)\*\*`)
var emRe = regexp.MustCompile(`\*([^*]+)\*`)

// inline renders the small Markdown subset the document uses in prose.
func inline(s string) string {
	s = html.EscapeString(s)
	s = boldRe.ReplaceAllString(s, "<strong>$1</strong>")
	return emRe.ReplaceAllString(s, "<em>$1</em>")
}

func htmlTable(b *strings.Builder, t Table) {
	b.WriteString("<div class=\"tw\"><table>\n")
	if t.Caption != "" {
		fmt.Fprintf(b, "<caption>%s</caption>\n", html.EscapeString(t.Caption))
	}
	b.WriteString("<thead><tr>")
	for i, h := range t.Header {
		fmt.Fprintf(b, "<th%s>%s</th>", align(t, i), html.EscapeString(h))
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	for _, row := range t.Rows {
		b.WriteString("<tr>")
		for i, c := range row {
			text := html.EscapeString(c.Text)
			if c.Class != "" {
				text = fmt.Sprintf("<span class=\"badge %s\">%s</span>", c.Class, text)
			}
			if c.Best {
				text = "<strong>" + text + "</strong>"
			}
			fmt.Fprintf(b, "<td%s>%s</td>", align(t, i), text)
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody></table></div>\n")
	for _, n := range t.Notes {
		fmt.Fprintf(b, "<p class=\"note\">%s</p>\n", inline(n))
	}
}

func align(t Table, i int) string {
	if i < len(t.Right) && t.Right[i] {
		return ` class="num"`
	}
	return ""
}

const css = `
:root{--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--bg:#ffffff;--alt:#f6f8fa}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 "DejaVu Sans","Helvetica Neue",Arial,sans-serif}
main{max-width:1320px;margin:0 auto;padding:28px 32px 64px}
h1{font-size:26px;margin:0 0 12px}
h2{font-size:20px;margin:36px 0 10px;padding-bottom:4px;border-bottom:2px solid var(--line)}
p{margin:8px 0;max-width:110ch}
p.lead{font-size:15px}
p.note{color:var(--muted);font-size:13px}
nav ol{display:flex;flex-wrap:wrap;gap:6px 18px;padding:0;margin:14px 0;list-style:none;counter-reset:s}
nav li{counter-increment:s}
nav li::before{content:counter(s) ". ";color:var(--muted)}
nav a{color:#0969da;text-decoration:none}
.tw{overflow-x:auto;margin:10px 0}
table{border-collapse:collapse;font-size:13px;font-variant-numeric:tabular-nums}
caption{text-align:left;font-weight:600;padding:4px 0}
th,td{padding:4px 9px;border-bottom:1px solid var(--line);white-space:nowrap;text-align:left}
th{background:var(--alt);font-weight:600}
td.num,th.num{text-align:right}
td:last-child{white-space:normal}
tbody tr:nth-child(even){background:#fbfcfd}
.badge{display:inline-block;padding:0 7px;border-radius:10px;font-size:12px;font-weight:600}
.badge.valid,.badge.pass{background:#dafbe1;color:#116329}
.badge.suspect{background:#fff8c5;color:#7d4e00}
.badge.invalid,.badge.fail{background:#ffebe9;color:#a40e26}
figure.fig{margin:16px 0;padding:8px;border:1px solid var(--line);border-radius:6px;background:#fff}
figure.fig svg{display:block;width:100%;height:auto}
`
