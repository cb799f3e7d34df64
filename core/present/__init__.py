"""Presentation: what people read. Altair charts (`charts`, `plan_charts`), tables in reading units (`tables`),
sentences (`readings`), numbers with units (`text`), each page's figures (`figures`), the HTML report and the tour.
Imports every layer below; nothing imports it but the pages and the CLI."""
