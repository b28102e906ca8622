// Sorts the index's tables by the column whose heading button is pressed: numbers by the cell's
// data-sort value, text by its text; blank cells stay last; equal keys keep their order. Rows are
// moved, never rewritten: no profile string is ever parsed as markup here.
(function () {
  "use strict";
  var tables = document.querySelectorAll("table.sortable");
  Array.prototype.forEach.call(tables, function (table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (head, column) {
      var button = head.querySelector("button");
      if (!button) {
        return;
      }
      button.addEventListener("click", function () {
        var ascending = head.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(heads, function (other) {
          other.removeAttribute("aria-sort");
        });
        head.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var numeric = head.getAttribute("data-type") === "num";
        var body = table.tBodies[0];
        var keyed = Array.prototype.map.call(body.rows, function (row, position) {
          var cell = row.cells[column];
          var key;
          if (numeric) {
            key = parseFloat(cell.getAttribute("data-sort"));
            key = isNaN(key) ? null : key;
          } else {
            key = cell.textContent.trim().toLowerCase();
            key = key === "" ? null : key;
          }
          return { key: key, position: position, row: row };
        });
        keyed.sort(function (a, b) {
          if (a.key === b.key) {
            return a.position - b.position;
          }
          if (a.key === null) {
            return 1;
          }
          if (b.key === null) {
            return -1;
          }
          var order = a.key < b.key ? -1 : 1;
          return ascending ? order : -order;
        });
        var sorted = document.createDocumentFragment();
        keyed.forEach(function (item) {
          sorted.appendChild(item.row);
        });
        body.appendChild(sorted);
      });
    });
  });
})();
