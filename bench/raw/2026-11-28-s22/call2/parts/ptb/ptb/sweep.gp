$points << EOD
6610628 1651180 149.67140000000001 "R8 c1" 0 0 1
6610652 1628630 149.26539600000001 "R8 c2" 0 0 1
6610700 1556550 150.032422 "R8 c4" 0 0 0
6629084 1571310 146.45953700000001 "R16 c1" 0 0 0
6629132 1514100 147.044206 "R16 c2" 0 0 0
6629228 1572080 147.713618 "R16 c4" 0 0 0
6684452 1481640 146.22107700000001 "R40 c1" 0 0 0
6684572 1464880 146.823883 "R40 c2" 0 0 0
6684812 1494170 146.41930400000001 "R40 c4" 0 0 0
6739820 1503000 145.164233 "R64 c1" 0 0 0
6740012 1477790 145.74681899999999 "R64 c2" 0 0 0
6740396 1467700 147.609782 "R64 c4" 0 0 0
6887468 1207870 144.24455499999999 "R128 c1" 0 0 0
6887852 1196820 144.32469 "R128 c2" 0 0 0
6888620 1287370 144.27847199999999 "R128 c4" 0 0 0
6610628 1547940 107.648467 "R8 c1 u" 1 1 0
6610652 1532370 107.341977 "R8 c2 u" 1 1 0
6610700 1551120 107.549055 "R8 c4 u" 1 0 0
6629084 1614930 88.231425400000006 "R16 c1 u" 1 1 1
6629132 1532120 87.2726246 "R16 c2 u" 1 1 0
6629228 1547380 88.515403500000005 "R16 c4 u" 1 0 0
6684452 1432500 55.345914200000003 "R40 c1 u" 1 1 0
6684572 1472660 54.802461800000003 "R40 c2 u" 1 1 0
6684812 1512230 55.427615500000002 "R40 c4 u" 1 0 0
6739820 1590770 45.394629799999997 "R64 c1 u" 1 1 0
6740012 1594940 45.192999200000003 "R64 c2 u" 1 1 1
6740396 1579940 45.688498000000003 "R64 c4 u" 1 0 0
6887468 1302090 40.957784099999998 "R128 c1 u" 1 1 1
6887852 1286640 40.762271599999998 "R128 c2 u" 1 1 1
6888620 1297390 40.9708252 "R128 c4 u" 1 0 0
6789292 1235390 77.898814299999998 "TXL M" 2 1 1
6789292 1358980 91.804662300000004 "TXL M0" 3 1 1
EOD
$paper << EOD
12000000 57.899999999999999 "paper core-1"
12000000 49.799999999999997 "paper core-2"
EOD
$front_params << EOD
6610628 107.648467
6610652 107.341977
6629084 88.231425400000006
6629132 87.2726246
6684452 55.345914200000003
6684572 54.802461800000003
6739820 45.394629799999997
6740012 45.192999200000003
6887468 40.957784099999998
6887852 40.762271599999998
EOD
$front_tps << EOD
1651180 149.67140000000001
1628630 149.26539600000001
1614930 88.231425400000006
1594940 45.192999200000003
1302090 40.957784099999998
1286640 40.762271599999998
EOD
set grid
set logscale x
set logscale y
set key outside below horizontal font ',9'
set format x '%.3s%c'
set format y '%.4g'
set terminal pngcairo size 1400,560
set output '/tmp/parts22b/ptb/ptb/sweep.png'
set multiplot layout 1,2
set xtics ("7M" 7000000, "8M" 8000000, "9M" 9000000, "10M" 10000000, "11M" 11000000, "12M" 12000000)
set ytics ("40" 40, "60" 60, "80" 80, "100" 100, "120" 120, "140" 140, "160" 160)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [6.22958e+06:1.2734e+07]
set yrange [35.3621:172.944]
plot $points using 1:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 1:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 1:(column(5) == 2 ? column(3) : NaN) with points pt 7 ps 1.3 lc 3 title 'txl-mem', $points using 1:(column(5) == 3 ? column(3) : NaN) with points pt 7 ps 1.3 lc 4 title 'txl-nomem', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front', $paper using 1:2 with points pt 6 ps 2 lc rgb 'black' title 'the paper (unmasked)', '' every ::0::0 using 1:2:3 with labels offset 0,1.2 font ',8' notitle, '' every ::1::1 using 1:2:3 with labels offset 0,-1.2 font ',8' notitle
set xtics ("1.2M" 1200000, "1.3M" 1300000, "1.4M" 1400000, "1.5M" 1500000, "1.6M" 1600000, "1.7M" 1700000)
set ytics ("40" 40, "60" 60, "80" 80, "100" 100, "120" 120, "140" 140, "160" 160)
set xlabel 'training tokens/s (measured by tt-bench)'
set ylabel 'test perplexity'
set xrange [1.14341e+06:1.7283e+06]
set yrange [35.3621:172.944]
plot $points using 2:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 2:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 2:(column(5) == 2 ? column(3) : NaN) with points pt 7 ps 1.3 lc 3 title 'txl-mem', $points using 2:(column(5) == 3 ? column(3) : NaN) with points pt 7 ps 1.3 lc 4 title 'txl-nomem', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
set terminal svg size 1400,560
set output '/tmp/parts22b/ptb/ptb/sweep.svg'
set multiplot layout 1,2
set xtics ("7M" 7000000, "8M" 8000000, "9M" 9000000, "10M" 10000000, "11M" 11000000, "12M" 12000000)
set ytics ("40" 40, "60" 60, "80" 80, "100" 100, "120" 120, "140" 140, "160" 160)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [6.22958e+06:1.2734e+07]
set yrange [35.3621:172.944]
plot $points using 1:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 1:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 1:(column(5) == 2 ? column(3) : NaN) with points pt 7 ps 1.3 lc 3 title 'txl-mem', $points using 1:(column(5) == 3 ? column(3) : NaN) with points pt 7 ps 1.3 lc 4 title 'txl-nomem', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front', $paper using 1:2 with points pt 6 ps 2 lc rgb 'black' title 'the paper (unmasked)', '' every ::0::0 using 1:2:3 with labels offset 0,1.2 font ',8' notitle, '' every ::1::1 using 1:2:3 with labels offset 0,-1.2 font ',8' notitle
set xtics ("1.2M" 1200000, "1.3M" 1300000, "1.4M" 1400000, "1.5M" 1500000, "1.6M" 1600000, "1.7M" 1700000)
set ytics ("40" 40, "60" 60, "80" 80, "100" 100, "120" 120, "140" 140, "160" 160)
set xlabel 'training tokens/s (measured by tt-bench)'
set ylabel 'test perplexity'
set xrange [1.14341e+06:1.7283e+06]
set yrange [35.3621:172.944]
plot $points using 2:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 2:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 2:(column(5) == 2 ? column(3) : NaN) with points pt 7 ps 1.3 lc 3 title 'txl-mem', $points using 2:(column(5) == 3 ? column(3) : NaN) with points pt 7 ps 1.3 lc 4 title 'txl-nomem', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
