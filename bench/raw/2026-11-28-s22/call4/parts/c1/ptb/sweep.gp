$points << EOD
6610628 1858744.3575566716 154.63011480866717 "R8 c1" 0 1 1
6610652 1846806.0779232569 154.79634351438219 "R8 c2" 0 0 0
6610700 1794797.4142905271 154.820721631803 "R8 c4" 0 0 0
6629084 1810573.5655459836 152.90601154217148 "R16 c1" 0 1 1
6629132 1824863.226532018 153.11963783781604 "R16 c2" 0 0 1
6629228 1812616.4916294732 152.92717247207628 "R16 c4" 0 0 1
6684452 1713764.9702180126 151.78937548244855 "R40 c1" 0 1 0
6684572 1722819.4710580502 151.67860339721372 "R40 c2" 0 1 0
6684812 1756803.5924876758 151.63881361777578 "R40 c4" 0 1 1
EOD
$paper << EOD
12000000 57.899999999999999 "paper core-1"
12000000 49.799999999999997 "paper core-2"
EOD
$front_params << EOD
6610628 154.63011480866717
6629084 152.90601154217148
6684452 151.78937548244855
6684572 151.67860339721372
6684812 151.63881361777578
EOD
$front_tps << EOD
1858744.3575566716 154.63011480866717
1824863.226532018 153.11963783781604
1812616.4916294732 152.92717247207628
1810573.5655459836 152.90601154217148
1756803.5924876758 151.63881361777578
EOD
set grid
set logscale x
set logscale y
set key outside below horizontal font ',9'
set format x '%.3s%c'
set format y '%.4g'
set terminal pngcairo size 1400,560
set output '/tmp/parts22d/c1/ptb/sweep.png'
set multiplot layout 1,2
set xtics ("7M" 7000000, "8M" 8000000, "9M" 9000000, "10M" 10000000, "11M" 11000000, "12M" 12000000)
set ytics ("60" 60, "80" 80, "100" 100, "120" 120, "140" 140, "160" 160)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [6.22958e+06:1.2734e+07]
set yrange [43.5688:176.963]
plot $points using 1:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front', $paper using 1:2 with points pt 6 ps 2 lc rgb 'black' title 'the paper (unmasked)', '' every ::0::0 using 1:2:3 with labels offset 0,1.2 font ',8' notitle, '' every ::1::1 using 1:2:3 with labels offset 0,-1.2 font ',8' notitle
set xtics ("1.7M" 1700000, "1.75M" 1750000, "1.8M" 1800000, "1.85M" 1850000, "1.9M" 1900000)
set ytics ("60" 60, "80" 80, "100" 100, "120" 120, "140" 140, "160" 160)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.65711e+06:1.9223e+06]
set yrange [43.5688:176.963]
plot $points using 2:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
set terminal svg size 1400,560
set output '/tmp/parts22d/c1/ptb/sweep.svg'
set multiplot layout 1,2
set xtics ("7M" 7000000, "8M" 8000000, "9M" 9000000, "10M" 10000000, "11M" 11000000, "12M" 12000000)
set ytics ("60" 60, "80" 80, "100" 100, "120" 120, "140" 140, "160" 160)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [6.22958e+06:1.2734e+07]
set yrange [43.5688:176.963]
plot $points using 1:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front', $paper using 1:2 with points pt 6 ps 2 lc rgb 'black' title 'the paper (unmasked)', '' every ::0::0 using 1:2:3 with labels offset 0,1.2 font ',8' notitle, '' every ::1::1 using 1:2:3 with labels offset 0,-1.2 font ',8' notitle
set xtics ("1.7M" 1700000, "1.75M" 1750000, "1.8M" 1800000, "1.85M" 1850000, "1.9M" 1900000)
set ytics ("60" 60, "80" 80, "100" 100, "120" 120, "140" 140, "160" 160)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.65711e+06:1.9223e+06]
set yrange [43.5688:176.963]
plot $points using 2:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
