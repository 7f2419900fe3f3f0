// Exports of the current view (PNG, SVG, CSV, JSON, HTML): the buttons live in #export-bar.
// (Placeholder: the exports are built in this folder.)
export {};
