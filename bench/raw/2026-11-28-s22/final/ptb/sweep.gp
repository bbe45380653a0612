$paper << EOD
12000000 57.899999999999999 "paper core-1"
12000000 49.799999999999997 "paper core-2"
EOD
$points << EOD
6610628 1858740 154.63011499999999 0 "" ""
6610652 1846810 154.796344 0 "" ""
6610700 1794800 154.82072199999999 0 "" ""
6629084 1810570 152.906012 0 "" "R16 c1,2,4"
6629132 1824860 153.11963800000001 0 "" ""
6629228 1812620 152.92717200000001 0 "" ""
6684452 1713760 151.78937500000001 0 "" ""
6684572 1722820 151.67860300000001 0 "" ""
6684812 1756800 151.638814 0 "" ""
6739820 1725310 150.41375199999999 0 "" ""
6740012 1730630 150.69139699999999 0 "" ""
6740396 1742910 151.24291400000001 0 "" ""
6887468 1401710 151.247479 0 "" ""
6887852 1392740 151.41221999999999 0 "" ""
6888620 1396750 151.584405 0 "" ""
6610628 1787740 114.730182 1 "" ""
6610652 1786330 112.21745199999999 1 "" ""
6610700 1795200 112.15807700000001 1 "R8 c1,2,4 u" "R8 c4 u"
6629084 1753690 92.377850899999999 1 "" ""
6629132 1785890 92.767561700000002 1 "" "R16 c2 u"
6629228 1776910 92.625473700000001 1 "" ""
6684452 1744700 54.585402299999998 1 "R40 c1 u" ""
6684572 1778680 55.384378699999999 1 "" ""
6684812 1757190 54.768983900000002 1 "" ""
6739820 1780090 43.8758707 1 "R64 c1 u" ""
6740012 1745970 46.455239800000001 1 "" ""
6740396 1749390 42.404812999999997 1 "" "R64 c1,4 u"
6887468 1432130 40.4360444 1 "" ""
6887852 1398410 40.004406600000003 1 "R128 c1,2 u" "R128 c1,2 u"
6888620 1404280 40.950141799999997 1 "" ""
6789292 1377290 76.707703499999994 2 "TXL M" "TXL M"
6789292 1476220 90.377248699999996 3 "TXL M0" "TXL M0"
EOD
$front_params << EOD
6610628 114.730182
6610652 112.21745199999999
6610700 112.15807700000001
6629084 92.377850899999999
6684452 54.585402299999998
6739820 43.8758707
6740396 42.404812999999997
6887468 40.4360444
6887852 40.004406600000003
EOD
$front_tps << EOD
1858740 154.63011499999999
1824860 153.11963800000001
1812620 152.92717200000001
1810570 152.906012
1795200 112.15807700000001
1785890 92.767561700000002
1780090 43.8758707
1749390 42.404812999999997
1432130 40.4360444
1398410 40.004406600000003
EOD
set grid
set logscale x
set logscale y
set key outside below horizontal font ',9'
set format x '%.3s%c'
set format y '%.4g'
set terminal pngcairo size 1400,560
set output '/tmp/w/fin2/ptb/sweep.png'
set multiplot layout 1,2
set xtics ("7M" 7000000, "8M" 8000000, "9M" 9000000, "10M" 10000000, "11M" 11000000, "12M" 12000000)
set ytics ("40" 40, "60" 60, "80" 80, "100" 100, "120" 120, "140" 140, "160" 160)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [6.22958e+06:1.2734e+07]
set yrange [34.6177:178.912]
plot $points using 1:(column(4) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 1:(column(4) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 1:(column(4) == 2 ? column(3) : NaN) with points pt 7 ps 1.3 lc 3 title 'txl-mem', $points using 1:(column(4) == 3 ? column(3) : NaN) with points pt 7 ps 1.3 lc 4 title 'txl-nomem', $points using 1:3:5 with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front', $paper using 1:2 with points pt 6 ps 2 lc rgb 'black' title 'the paper (unmasked)', '' every ::0::0 using 1:2:3 with labels offset 0,1.2 font ',8' notitle, '' every ::1::1 using 1:2:3 with labels offset 0,-1.2 font ',8' notitle
set xtics ("1.4M" 1400000, "1.5M" 1500000, "1.6M" 1600000, "1.7M" 1700000, "1.8M" 1800000, "1.9M" 1900000)
set ytics ("40" 40, "60" 60, "80" 80, "100" 100, "120" 120, "140" 140, "160" 160)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.31728e+06:1.94341e+06]
set yrange [34.6177:178.912]
plot $points using 2:(column(4) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 2:(column(4) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 2:(column(4) == 2 ? column(3) : NaN) with points pt 7 ps 1.3 lc 3 title 'txl-mem', $points using 2:(column(4) == 3 ? column(3) : NaN) with points pt 7 ps 1.3 lc 4 title 'txl-nomem', $points using 2:3:6 with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
set terminal svg size 1400,560
set output '/tmp/w/fin2/ptb/sweep.svg'
set multiplot layout 1,2
set xtics ("7M" 7000000, "8M" 8000000, "9M" 9000000, "10M" 10000000, "11M" 11000000, "12M" 12000000)
set ytics ("40" 40, "60" 60, "80" 80, "100" 100, "120" 120, "140" 140, "160" 160)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [6.22958e+06:1.2734e+07]
set yrange [34.6177:178.912]
plot $points using 1:(column(4) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 1:(column(4) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 1:(column(4) == 2 ? column(3) : NaN) with points pt 7 ps 1.3 lc 3 title 'txl-mem', $points using 1:(column(4) == 3 ? column(3) : NaN) with points pt 7 ps 1.3 lc 4 title 'txl-nomem', $points using 1:3:5 with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front', $paper using 1:2 with points pt 6 ps 2 lc rgb 'black' title 'the paper (unmasked)', '' every ::0::0 using 1:2:3 with labels offset 0,1.2 font ',8' notitle, '' every ::1::1 using 1:2:3 with labels offset 0,-1.2 font ',8' notitle
set xtics ("1.4M" 1400000, "1.5M" 1500000, "1.6M" 1600000, "1.7M" 1700000, "1.8M" 1800000, "1.9M" 1900000)
set ytics ("40" 40, "60" 60, "80" 80, "100" 100, "120" 120, "140" 140, "160" 160)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.31728e+06:1.94341e+06]
set yrange [34.6177:178.912]
plot $points using 2:(column(4) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 2:(column(4) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 2:(column(4) == 2 ? column(3) : NaN) with points pt 7 ps 1.3 lc 3 title 'txl-mem', $points using 2:(column(4) == 3 ? column(3) : NaN) with points pt 7 ps 1.3 lc 4 title 'txl-nomem', $points using 2:3:6 with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
