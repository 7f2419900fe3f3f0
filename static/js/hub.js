// The old name of pageview.js (the classroom still imports it from here until it switches).
export * from "./pageview.js";
