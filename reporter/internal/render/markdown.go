package render

import (
	"fmt"
	"io"
	"strings"
)

// Markdown writes d as GitHub-flavoured Markdown; figures are linked
// relative to the report (figures/<name>).
func Markdown(w io.Writer, d Doc) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", d.Title)
	for _, p := range d.Lead {
		fmt.Fprintf(&b, "%s\n\n", p)
	}
	for _, s := range d.Sections {
		fmt.Fprintf(&b, "## %s\n\n", s.Title)
		for _, p := range s.Text {
			fmt.Fprintf(&b, "%s\n\n", p)
		}
		lead := min(s.Lead, len(s.Tables))
		for _, t := range s.Tables[:lead] {
			mdTable(&b, t)
		}
		for _, f := range s.Figures {
			fmt.Fprintf(&b, "![%s](figures/%s)\n\n", strings.TrimSuffix(f, ".svg"), f)
		}
		for _, t := range s.Tables[lead:] {
			mdTable(&b, t)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdTable(b *strings.Builder, t Table) {
	if t.Caption != "" {
		fmt.Fprintf(b, "**%s**\n\n", t.Caption)
	}
	b.WriteString("|")
	for _, h := range t.Header {
		fmt.Fprintf(b, " %s |", mdEscape(h))
	}
	b.WriteString("\n|")
	for i := range t.Header {
		if i < len(t.Right) && t.Right[i] {
			b.WriteString("---:|")
		} else {
			b.WriteString(":---|")
		}
	}
	b.WriteString("\n")
	for _, row := range t.Rows {
		b.WriteString("|")
		for _, c := range row {
			s := mdEscape(c.Text)
			if c.Best && s != "" {
				s = "**" + s + "**"
			}
			fmt.Fprintf(b, " %s |", s)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	for _, n := range t.Notes {
		fmt.Fprintf(b, "%s\n\n", n)
	}
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
