(function(){
  function val(td){var v=td.getAttribute('data-sort');if(v===null)v=td.getAttribute('data-value');if(v!==null&&v!==''&&!isNaN(+v))return +v;return td.textContent.trim().toLowerCase();}
  document.querySelectorAll('table.sortable').forEach(function(t){
    t.querySelectorAll('th').forEach(function(th,i){
      th.addEventListener('click',function(){
        var body=t.tBodies[0],rows=Array.prototype.slice.call(body.rows),asc=th.getAttribute('data-asc')!=='1';
        rows.sort(function(a,b){var x=val(a.cells[i]),y=val(b.cells[i]);if(x===y)return 0;
          if(typeof x!==typeof y)return typeof x==='number'?-1:1;return (x<y?-1:1)*(asc?1:-1);});
        rows.forEach(function(r){body.appendChild(r);});th.setAttribute('data-asc',asc?'1':'0');
      });
    });
  });
  document.querySelectorAll('input.filter').forEach(function(inp){
    var t=document.getElementById(inp.getAttribute('data-table'));
    inp.addEventListener('input',function(){var q=inp.value.toLowerCase();
      Array.prototype.forEach.call(t.tBodies[0].rows,function(r){r.style.display=r.textContent.toLowerCase().indexOf(q)>=0?'':'none';});});
  });
})();
