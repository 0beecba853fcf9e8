package errcat

// Markdown exposes the docs page's markdown renderer to the black-box tests.
var Markdown = markdown
